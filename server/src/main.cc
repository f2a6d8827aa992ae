// myops-server: parses flags, starts the server, and on SIGTERM/SIGINT drains it
// gracefully (health NOT_SERVING at once; requests still accepted for --drain-delay;
// then new RPCs are refused and in-flight ones finish within --grace-period) and exits 0.
#include <unistd.h>

#include <grpc/support/log.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "config.h"
#include "server.h"

namespace {

int g_signal_pipe[2] = {-1, -1};

// Async-signal-safe: hands the signal number to the main thread through a pipe, whichever
// thread the kernel delivered it to.
extern "C" void OnSignal(int sig) {
  const char c = static_cast<char>(sig);
  [[maybe_unused]] ssize_t n = write(g_signal_pipe[1], &c, 1);
}

int WaitForSignal() {
  char c = 0;
  while (read(g_signal_pipe[0], &c, 1) < 0) {
  }
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  // gRPC locks absl::Mutex on every call; Debian's abseil checks each lock for deadlock
  // cycles (a debug aid: ~7% of the CPU at 1 KiB requests, bench/README.md). Off.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  // Exported programs' compiled code checks its inputs itself only with this set (read
  // once, at a program's first call): a second line behind the server's own checks
  // (runtime/program.h). Set here, before any thread runs (setenv races getenv); an
  // explicit AOTI_RUNTIME_CHECK_INPUTS=0 in the environment wins.
  setenv("AOTI_RUNTIME_CHECK_INPUTS", "1", /*overwrite=*/0);
  auto parsed = myops::server::ParseCommandLine(argc, argv);
  if (parsed.exit_code >= 0) {
    (parsed.exit_code == 0 ? std::cout : std::cerr) << parsed.message << std::flush;
    return parsed.exit_code;
  }
  const std::string& level = parsed.config.log_level;
  // gRPC's own logs are verbose at INFO: show them only at debug.
  gpr_set_log_verbosity(level == "debug" ? GPR_LOG_SEVERITY_DEBUG : GPR_LOG_SEVERITY_ERROR);
  const bool info = level == "info" || level == "debug";
  if (pipe(g_signal_pipe) != 0) {
    std::perror("myops-server: pipe");
    return 1;
  }
  struct sigaction action = {};
  action.sa_handler = OnSignal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  auto server = myops::server::Server::Start(parsed.config.server);
  if (!server.ok()) {
    std::cerr << "myops-server: " << server.status().message() << std::endl;
    return 1;
  }
  std::cout << (*server)->Describe() << std::endl;

  const int sig = WaitForSignal();
  if (info) {
    std::cerr << "myops-server: " << (sig == SIGINT ? "SIGINT" : "SIGTERM") << ": draining ("
              << parsed.config.drain_delay.count() << " ms, then up to "
              << parsed.config.grace_period.count() << " ms for requests in flight)" << std::endl;
  }
  (*server)->BeginDrain();
  std::this_thread::sleep_for(parsed.config.drain_delay);
  (*server)->Shutdown(parsed.config.grace_period);
  if (info) std::cerr << "myops-server: stopped" << std::endl;
  return 0;
}
