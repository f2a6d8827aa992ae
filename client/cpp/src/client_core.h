// The state a Client shares with its asynchronous calls and stream sessions: options,
// channel and stubs. Immutable after creation; the gRPC channel and stubs are thread-safe.
#ifndef MYOPS_CLIENT_SRC_CLIENT_CORE_H_
#define MYOPS_CLIENT_SRC_CLIENT_CORE_H_

#include <memory>

#include <grpcpp/channel.h>
#include <grpcpp/generic/generic_stub.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "myops/client/options.h"
#include "myops/v1/myops.grpc.pb.h"

namespace myops::client::internal {

struct ClientCore {
  ClientOptions options;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<myops::v1::Myops::Stub> stub;
  std::unique_ptr<grpc::GenericStub> generic_stub;  // For grpc.health.v1.
};

// InvalidArgumentError naming the first bad field of `options`.
absl::Status ValidateClientOptions(const ClientOptions& options);

// Validates `options`, then builds the channel (credentials, message size limits, extra
// channel arguments) and the stubs. Does not connect.
absl::StatusOr<std::shared_ptr<ClientCore>> CreateClientCore(ClientOptions options);

}  // namespace myops::client::internal

#endif  // MYOPS_CLIENT_SRC_CLIENT_CORE_H_
