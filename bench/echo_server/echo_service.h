// EchoService: the myops.v1.Myops service answered without computing anything. ScaleShift
// and ScaleShiftStream return the input tensor's dtype, shape and bytes unchanged (one
// copy, as the real operator reads and writes every byte once) and do no validation;
// ServerInfo describes the echo server. It is the protocol floor the real server is
// benchmarked against, and the server the client tests run against.
#ifndef MYOPS_BENCH_ECHO_SERVER_ECHO_SERVICE_H_
#define MYOPS_BENCH_ECHO_SERVER_ECHO_SERVICE_H_

#include <cstdint>

#include <grpcpp/support/server_callback.h>

#include "myops/v1/myops.grpc.pb.h"

namespace myops::echo {

struct EchoServiceOptions {
  // Reported in ServerInfo.limits (the server's builder enforces it).
  int64_t max_message_bytes = int64_t{1} << 30;
};

// Callback-API service. Thread-safe: handlers share no mutable state. The server does not
// own it: it must outlive the grpc::Server it is registered with.
class EchoService final : public myops::v1::Myops::CallbackService {
 public:
  explicit EchoService(EchoServiceOptions options = {}) : options_(options) {}

  grpc::ServerUnaryReactor* ScaleShift(grpc::CallbackServerContext* context,
                                       const myops::v1::ScaleShiftRequest* request,
                                       myops::v1::ScaleShiftResponse* response) override;

  grpc::ServerBidiReactor<myops::v1::ScaleShiftRequest, myops::v1::ScaleShiftStreamResponse>*
  ScaleShiftStream(grpc::CallbackServerContext* context) override;

  grpc::ServerUnaryReactor* ServerInfo(grpc::CallbackServerContext* context,
                                       const myops::v1::ServerInfoRequest* request,
                                       myops::v1::ServerInfoResponse* response) override;

 private:
  const EchoServiceOptions options_;
};

}  // namespace myops::echo

#endif  // MYOPS_BENCH_ECHO_SERVER_ECHO_SERVICE_H_
