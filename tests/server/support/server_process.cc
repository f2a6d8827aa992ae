// myops-server as a child process (see server_process.h).
#include "server_process.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <regex>

extern char** environ;

namespace myops::server::testing {

const char* ServerBinary() {
  const char* env = std::getenv("MYOPS_SERVER_BINARY");
  return env != nullptr && *env != '\0' ? env : MYOPS_SERVER_BINARY;
}

ServerProcess::ServerProcess(std::vector<std::string> args, std::vector<std::string> env) {
  std::vector<std::string> environment;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, "MYOPS_", 6) != 0) environment.emplace_back(*e);
  }
  environment.insert(environment.end(), env.begin(), env.end());
  int out[2];
  if (pipe(out) != 0) return;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&fa, out[1], STDERR_FILENO);
  posix_spawn_file_actions_addclose(&fa, out[0]);
  args.insert(args.begin(), ServerBinary());
  std::vector<char*> argv, envp;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : environment) envp.push_back(e.data());
  envp.push_back(nullptr);
  if (posix_spawn(&pid_, ServerBinary(), &fa, nullptr, argv.data(), envp.data()) != 0) pid_ = -1;
  posix_spawn_file_actions_destroy(&fa);
  close(out[1]);
  out_ = fdopen(out[0], "r");
}

ServerProcess::~ServerProcess() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (out_) fclose(out_);
}

int ServerProcess::WaitForPort() {
  char buf[4096];
  static const std::regex re("listening on [0-9.]+:([0-9]+)");
  while (out_ && fgets(buf, sizeof buf, out_)) {
    output_ += buf;
    std::cmatch m;
    if (std::regex_search(buf, m, re)) {
      startup_line_ = buf;
      return std::stoi(m[1].str());
    }
  }
  return 0;
}

namespace {
int ExitCode(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
}  // namespace

bool ServerProcess::Running() {
  if (pid_ <= 0) return false;
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) == 0) return true;
  exit_code_ = ExitCode(status);
  pid_ = -1;
  return false;
}

void ServerProcess::Signal(int sig) {
  if (pid_ > 0) kill(pid_, sig);
}

int ServerProcess::Wait() {
  char buf[4096];
  size_t n;
  while (out_ && (n = fread(buf, 1, sizeof buf, out_)) > 0) output_.append(buf, n);
  if (pid_ > 0) {
    int status = 0;
    waitpid(pid_, &status, 0);
    exit_code_ = ExitCode(status);
    pid_ = -1;
  }
  return exit_code_;
}

int RunServer(std::vector<std::string> args, std::string* output, std::vector<std::string> env) {
  ServerProcess p(std::move(args), std::move(env));
  const int code = p.Wait();
  *output = p.output();
  return code;
}

}  // namespace myops::server::testing
