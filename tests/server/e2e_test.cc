// End to end with the real myops-server binary: startup line, health, info, and a
// SIGTERM while requests are in flight (each gets its correct response; exit code 0).
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <regex>
#include <thread>

#include "reference.h"
#include "test_server.h"

extern char** environ;

namespace myops::server {
namespace {

using myops::v1::ScaleShiftRequest;
using myops::v1::ScaleShiftResponse;

// The binary under test: MYOPS_SERVER_BINARY from the environment, else the build's.
const char* ServerBinary() {
  const char* env = std::getenv("MYOPS_SERVER_BINARY");
  return env != nullptr && *env != '\0' ? env : MYOPS_SERVER_BINARY;
}

// A myops-server child process; killed if the test ends early.
class ServerProcess {
 public:
  explicit ServerProcess(std::vector<std::string> args) {
    int out[2];
    if (pipe(out) != 0) return;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&fa, out[0]);
    args.insert(args.begin(), ServerBinary());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (posix_spawn(&pid_, ServerBinary(), &fa, nullptr, argv.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&fa);
    close(out[1]);
    stdout_ = fdopen(out[0], "r");
  }
  ~ServerProcess() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (stdout_) fclose(stdout_);
  }
  // Reads stdout until the startup line; returns the port (0 if the server died).
  int WaitForPort(std::string* line) {
    char buf[4096];
    std::regex re("listening on 127\\.0\\.0\\.1:([0-9]+)");
    while (stdout_ && fgets(buf, sizeof buf, stdout_)) {
      std::cmatch m;
      if (std::regex_search(buf, m, re)) {
        *line = buf;
        return std::stoi(m[1].str());
      }
    }
    return 0;
  }
  void Signal(int sig) { kill(pid_, sig); }
  int Wait() {
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

 private:
  pid_t pid_ = -1;
  FILE* stdout_ = nullptr;
};

TEST(EndToEndTest, ServesThenDrainsOnSigtermWithoutLosingRequests) {
  ServerProcess server({"--address", "127.0.0.1:0", "--devices", "cpu", "--cpu-workers", "1",
                        "--drain-delay", "2", "--grace-period", "60", "--max-message-bytes",
                        "536870912"});
  std::string line;
  const int port = server.WaitForPort(&line);
  ASSERT_GT(port, 0) << "server did not start";
  EXPECT_NE(line.find("devices: cpu"), std::string::npos) << line;
  EXPECT_NE(line.find("torch "), std::string::npos) << line;
  EXPECT_NE(line.find("max_inflight="), std::string::npos) << line;
  const std::string address = "127.0.0.1:" + std::to_string(port);
  auto channel = testing::Connect(address);
  auto stub = myops::v1::Myops::NewStub(channel);
  EXPECT_EQ(testing::HealthStatus(channel, ""), 1);
  {
    grpc::ClientContext ctx;
    myops::v1::ServerInfoResponse info;
    ASSERT_TRUE(stub->ServerInfo(&ctx, {}, &info).ok());
    EXPECT_EQ(info.operators_size(), 3);
  }

  // Eight 16 MiB requests at once on one worker; once the first answer is back, every
  // call has been started on the server (HTTP/2 sends all headers first): SIGTERM then.
  constexpr int kCalls = 8;
  struct Call {
    grpc::ClientContext ctx;
    ScaleShiftRequest request;
    ScaleShiftResponse response;
    grpc::Status status;
  };
  std::vector<std::unique_ptr<Call>> calls;
  std::mutex mu;
  std::condition_variable cv;
  int finished = 0;
  for (int i = 0; i < kCalls; ++i) {
    auto c = std::make_unique<Call>();
    c->request = testing::MakeRequest(DType::kFloat32, {4 << 20}, 2.0, -1.0, i + 1);
    c->ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
    calls.push_back(std::move(c));
  }
  for (auto& c : calls) {
    stub->async()->ScaleShift(&c->ctx, &c->request, &c->response, [&, p = c.get()](grpc::Status s) {
      std::lock_guard<std::mutex> lock(mu);
      p->status = s;
      ++finished;
      cv.notify_all();
    });
  }
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return finished >= 1; });
    ASSERT_LT(finished, kCalls) << "all calls finished before SIGTERM; nothing was in flight";
  }
  server.Signal(SIGTERM);
  // Draining: health reports NOT_SERVING (2) while the server still answers.
  int health = 1;
  for (int i = 0; i < 200 && health == 1; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    health = testing::HealthStatus(channel, "");
  }
  EXPECT_EQ(health, 2);
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return finished == kCalls; });
  }
  for (auto& c : calls) {
    ASSERT_TRUE(c->status.ok()) << c->status.error_message();
    EXPECT_TRUE(c->response.output().data() ==
                testing::ReferenceScaleShift(DType::kFloat32, {4 << 20}, c->request.input().data(),
                                             2.0, -1.0));
  }
  // After the drain, new RPCs are refused; the process exits 0.
  const int code = server.Wait();
  EXPECT_EQ(code, 0);
  grpc::ClientContext late;
  late.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
  ScaleShiftResponse response;
  EXPECT_FALSE(stub->ScaleShift(&late, calls[0]->request, &response).ok());
}

TEST(EndToEndTest, HelpListsEveryFlagAndBadFlagsFail) {
  ServerProcess help({"--help"});
  EXPECT_EQ(help.Wait(), 0);
  ServerProcess bad({"--max-inflight", "-3"});
  EXPECT_NE(bad.Wait(), 0);
  ServerProcess no_gpu({"--devices", "cuda:5", "--address", "127.0.0.1:0"});
  EXPECT_EQ(no_gpu.Wait(), 1);
}

}  // namespace
}  // namespace myops::server
