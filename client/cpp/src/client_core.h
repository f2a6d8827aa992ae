// The state a Client shares with its asynchronous calls and stream sessions: options,
// channel, stubs and send buffers. Immutable after creation; the gRPC channel, the stubs
// and the send buffer pool are thread-safe.
#ifndef MYOPS_CLIENT_SRC_CLIENT_CORE_H_
#define MYOPS_CLIENT_SRC_CLIENT_CORE_H_

#include <memory>
#include <string>

#include <grpcpp/client_context.h>

#include <grpcpp/channel.h>
#include <grpcpp/generic/generic_stub.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "myops/client/options.h"
#include "myops/v1/myops.grpc.pb.h"
#include "send_buffers.h"
#include "shm_pool.h"

namespace myops::client::internal {

// The unary ScaleShift is called raw (grpc::ByteBuffer in and out, see codec.h), so the
// tensor bytes skip protobuf's copies; the wire format is the generated stub's.
inline constexpr char kScaleShiftMethod[] = "/myops.v1.Myops/ScaleShift";
// Call and CallStream likewise (call_codec.h).
inline constexpr char kCallMethod[] = "/myops.v1.Myops/Call";
inline constexpr char kCallStreamMethod[] = "/myops.v1.Myops/CallStream";
// The asynchronous ListOperators, ServerInfo and health check are raw calls too, so that
// every asynchronous call shares one implementation (async_call.h) with its retries and
// cancellation; their messages are (de)serialized by the generated code.
inline constexpr char kListOperatorsMethod[] = "/myops.v1.Myops/ListOperators";
inline constexpr char kServerInfoMethod[] = "/myops.v1.Myops/ServerInfo";

struct ClientCore {
  ClientOptions options;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<myops::v1::Myops::Stub> stub;  // ScaleShiftStream, ServerInfo, ListOperators.
  // The raw calls: the methods above and grpc.health.v1 (health.h). Thread-safe.
  std::unique_ptr<grpc::GenericStub> generic_stub;
  std::shared_ptr<SendBufferPool> send_buffers;  // Thread-safe.
  // Shared memory regions (shm_pool.h); null with SharedMemoryMode::kOff. Thread-safe.
  std::shared_ptr<ShmPool> shm;
  std::string authorization;  // "Bearer <token>", or empty without options.auth_token.

  // Adds the call metadata every call carries (the bearer token, if any) to a new
  // context. Per call, because gRPC's call credentials refuse insecure channels.
  void Authorize(grpc::ClientContext* context) const;
};

// Marks the current thread as running a gRPC callback of the client (an asynchronous
// call's completion, which runs the user's callback) for the lifetime of the object.
// Destroying the last reference to a ClientCore there would destroy the channel on a
// thread of the completion queue that the channel's destruction shuts down and joins
// (gRPC 1.51's callback-alternative queue: the thread would join itself and go on with a
// deleted queue); the core's deleter then hands the destruction to a thread of its own.
class GrpcCallbackScope {
 public:
  GrpcCallbackScope();
  ~GrpcCallbackScope();
  GrpcCallbackScope(const GrpcCallbackScope&) = delete;
  GrpcCallbackScope& operator=(const GrpcCallbackScope&) = delete;

  static bool active();

 private:
  const bool outer_;
};

// The initial-metadata key under which servers name their replica.
inline constexpr char kReplicaMetadataKey[] = "myops-replica";

// The replica named in the server's initial metadata of a call made with `context`
// (received: after the call ended, or after a stream's first read); "" if none.
std::string ServingReplica(const grpc::ClientContext& context);

// The default service config of a channel with these options: the load balancing policy
// and, with round_robin, the health-checked service. JSON.
std::string ServiceConfigJson(const ClientOptions& options);

// InvalidArgumentError naming the first bad field of `options`.
absl::Status ValidateClientOptions(const ClientOptions& options);

// Validates `options`, then builds the channel (credentials, message size limits, extra
// channel arguments) and the stubs. Does not connect.
absl::StatusOr<std::shared_ptr<ClientCore>> CreateClientCore(ClientOptions options);

}  // namespace myops::client::internal

#endif  // MYOPS_CLIENT_SRC_CLIENT_CORE_H_
