// An in-process echo server (bench/echo_server's EchoService) on a free localhost port,
// with the default gRPC health service, for the client tests; optionally naming itself
// as a replica ("myops-replica" response metadata, as myops-server does).
#ifndef MYOPS_TESTS_CLIENT_ECHO_TEST_SERVER_H_
#define MYOPS_TESTS_CLIENT_ECHO_TEST_SERVER_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>
#include <grpcpp/support/server_interceptor.h>

#include "echo_service.h"

namespace myops::testing {

// Starts on construction, shuts down on destruction. Owns the server and its service.
class EchoTestServer {
 public:
  static constexpr int kMaxMessageBytes = 1 << 30;

  // `replica`: sent as "myops-replica" initial metadata on every response; "" sends none.
  explicit EchoTestServer(std::string replica = "")
      : service_({kMaxMessageBytes}), replica_(std::move(replica)) {
    grpc::EnableDefaultHealthCheckService(true);  // Global: affects servers built after.
    grpc::ServerBuilder builder;
    if (!replica_.empty()) {
      std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> f;
      f.push_back(std::make_unique<ReplicaFactory>(&replica_));
      builder.experimental().SetInterceptorCreators(std::move(f));
    }
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.SetMaxReceiveMessageSize(kMaxMessageBytes);
    builder.SetMaxSendMessageSize(kMaxMessageBytes);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
  }

  ~EchoTestServer() {
    if (server_ != nullptr) server_->Shutdown();
  }

  bool ok() const { return server_ != nullptr && port_ != 0; }
  std::string target() const { return "127.0.0.1:" + std::to_string(port_); }
  grpc::HealthCheckServiceInterface* health() { return server_->GetHealthCheckService(); }

 private:
  class ReplicaInterceptor final : public grpc::experimental::Interceptor {
   public:
    explicit ReplicaInterceptor(const std::string* name) : name_(name) {}
    void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
      if (methods->QueryInterceptionHookPoint(
              grpc::experimental::InterceptionHookPoints::PRE_SEND_INITIAL_METADATA)) {
        methods->GetSendInitialMetadata()->emplace("myops-replica", *name_);
      }
      methods->Proceed();
    }

   private:
    const std::string* name_;
  };
  class ReplicaFactory final : public grpc::experimental::ServerInterceptorFactoryInterface {
   public:
    explicit ReplicaFactory(const std::string* name) : name_(name) {}
    grpc::experimental::Interceptor* CreateServerInterceptor(
        grpc::experimental::ServerRpcInfo*) override {
      return new ReplicaInterceptor(name_);
    }

   private:
    const std::string* name_;
  };

  myops::echo::EchoService service_;
  const std::string replica_;  // Before server_: outlives it.
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

// A server that accepts every call and never answers (until the call is cancelled or
// its deadline passes), to test deadlines deterministically. No health service.
class StallingTestServer {
 public:
  StallingTestServer() {
    grpc::EnableDefaultHealthCheckService(false);
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterCallbackGenericService(&service_);
    server_ = builder.BuildAndStart();
  }

  ~StallingTestServer() {
    if (server_ != nullptr) server_->Shutdown();
  }

  bool ok() const { return server_ != nullptr && port_ != 0; }
  std::string target() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  class Reactor final : public grpc::ServerGenericBidiReactor {
   public:
    void OnCancel() override { Finish(grpc::Status::CANCELLED); }
    void OnDone() override { delete this; }
  };
  class Service final : public grpc::CallbackGenericService {
    grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext*) override {
      return new Reactor();
    }
  };

  Service service_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

// A localhost port nothing listens on (bound to port 0, then closed).
inline std::string UnusedTarget() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  int port = 1;  // Privileged and unused, should anything below fail.
  if (fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
    port = ntohs(address.sin_port);
  }
  if (fd >= 0) close(fd);
  return "127.0.0.1:" + std::to_string(port);
}

}  // namespace myops::testing

#endif  // MYOPS_TESTS_CLIENT_ECHO_TEST_SERVER_H_
