// Starts a real myops gRPC server in-process on a free loopback port, with a stub and
// helpers to build requests. No torch here (this header sits beside generated protobuf).
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <vector>

#include "myops/v1/myops.grpc.pb.h"
#include "server.h"

namespace myops::server::testing {

struct TestServer {
  std::unique_ptr<Server> server;
  std::string address;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<myops::v1::Myops::Stub> stub;
};

// Options with address 127.0.0.1:0, cpu only, 2 workers, no client share of the budget.
ServerOptions LoopbackOptions();

// Fails the current test (and returns an empty server) if it cannot start.
TestServer StartServer(const ServerOptions& options, std::unique_ptr<Executor> executor = nullptr);

// A new channel to `address` with 1 GiB message limits.
std::shared_ptr<grpc::Channel> Connect(const std::string& address);

myops::v1::ScaleShiftRequest MakeRequest(DType dtype, const std::vector<int64_t>& shape,
                                         double alpha, double beta, uint64_t seed = 1);

// grpc.health.v1.Health/Check through the generic API (no generated health stubs are
// installed). Returns the serving status (1 SERVING, 2 NOT_SERVING) or -1 on RPC error.
int HealthStatus(const std::shared_ptr<grpc::Channel>& channel, const std::string& service);

}  // namespace myops::server::testing
