// echo_server: serves EchoService (myops.v1.Myops answered by echoing the input) and the
// standard health service, for benchmarks and client tests.
//
//   echo_server [--address 127.0.0.1:50052] [--max-message-bytes 1073741824]
//
// Prints "echo_server listening on HOST:PORT" (the port actually bound when 0 was asked)
// once serving; SIGINT/SIGTERM shut it down cleanly (exit status 0).
#include <pthread.h>

#include <chrono>
#include <climits>
#include <csignal>
#include <cstdint>
#include <iostream>
#include <memory>
#include <string>

#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>
#include <CLI/CLI.hpp>

#include "absl/synchronization/mutex.h"
#include "echo_service.h"

namespace {

// "host:0" with the bound port -> "host:PORT" (also "[::]:0").
std::string WithPort(const std::string& address, int port) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) return address;
  return address.substr(0, colon + 1) + std::to_string(port);
}

int Main(int argc, char** argv) {
  // Debian's abseil checks every absl::Mutex lock (gRPC's included) for deadlock cycles:
  // a debug aid costing several % of CPU per call (bench/README.md). Off, as in myops-server.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  CLI::App app{"Bare myops.v1.Myops server that echoes its input (the protocol floor)."};
  std::string address = "127.0.0.1:50052";
  int64_t max_message_bytes = int64_t{1} << 30;
  app.add_option("--address", address, "host:port to listen on (port 0: any free port)")
      ->capture_default_str();
  app.add_option("--max-message-bytes", max_message_bytes, "Largest message received or sent")
      ->check(CLI::Range(int64_t{1}, int64_t{INT_MAX}))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  // Block the shutdown signals in every thread (gRPC's threads inherit the mask) and
  // wait for them below with sigwait: no work in a signal handler.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  myops::echo::EchoService service({max_message_bytes});
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &port);
  builder.SetMaxReceiveMessageSize(static_cast<int>(max_message_bytes));
  builder.SetMaxSendMessageSize(static_cast<int>(max_message_bytes));
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    std::cerr << "echo_server: cannot listen on " << address << "\n";
    return 1;
  }
  std::cout << "echo_server listening on " << WithPort(address, port) << std::endl;

  int signal = 0;
  sigwait(&signals, &signal);
  std::cout << "echo_server: signal " << signal << ", shutting down" << std::endl;
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  server->Wait();
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return Main(argc, argv); }
