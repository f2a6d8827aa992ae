// A myops-server child process for end-to-end tests: started with given flags and
// environment (the test's MYOPS_* variables are not inherited), its stdout and stderr
// read through one pipe, killed with SIGKILL if the test ends while it runs.
// Not thread-safe: one test thread drives it.
#pragma once

#include <sys/types.h>

#include <cstdio>
#include <string>
#include <vector>

namespace myops::server::testing {

// The binary under test: MYOPS_SERVER_BINARY from the environment, else the build's.
const char* ServerBinary();

class ServerProcess {
 public:
  // `env`: NAME=VALUE entries added to the environment.
  explicit ServerProcess(std::vector<std::string> args, std::vector<std::string> env = {});
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  // Reads output until the startup line; returns the port (0 if the server exited first).
  int WaitForPort();
  const std::string& startup_line() const { return startup_line_; }
  // Everything read so far; after Wait(), all the process wrote.
  const std::string& output() const { return output_; }
  bool Running();  // Not exited yet.
  void Signal(int sig);
  // Waits for the exit and reads the rest of the output. Returns the exit status, or
  // 128 + signal number when a signal ended it (a crash is never mistaken for exit 1).
  int Wait();

 private:
  pid_t pid_ = -1;
  int exit_code_ = -1;  // -1: failed to start
  FILE* out_ = nullptr;
  std::string output_, startup_line_;
};

// Runs myops-server to completion (it must exit by itself) and returns its exit status;
// `output` receives stdout and stderr.
int RunServer(std::vector<std::string> args, std::string* output,
              std::vector<std::string> env = {});

}  // namespace myops::server::testing
