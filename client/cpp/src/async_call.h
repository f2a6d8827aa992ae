// Asynchronous unary calls over the gRPC callback API (ScaleShift, Call), with the retries
// of the client's RetryPolicy scheduled on gRPC alarms (no thread blocks while waiting).
#ifndef MYOPS_CLIENT_SRC_ASYNC_CALL_H_
#define MYOPS_CLIENT_SRC_ASYNC_CALL_H_

#include <functional>
#include <memory>
#include <string>

#include <grpcpp/impl/rpc_method.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/status.h>

#include "myops/client/client.h"
#include "myops/client/options.h"
#include "myops/client/tensor.h"
#include "retry.h"

namespace myops::client::internal {

struct ClientCore;

// Receives a raw call's final status, (when OK) its response bytes, and the replica that
// answered (ServingReplica; "" if none or the call failed).
using RawUnaryDone = std::function<void(grpc::Status, grpc::ByteBuffer, std::string)>;

// Starts the raw unary call of `method` (owned by `core`) with `request`, retried as the
// blocking calls are until `deadline`; `done` runs once on a gRPC thread, after the call
// has released its request. The call keeps `core` alive until then.
void StartAsyncUnary(std::shared_ptr<ClientCore> core, const grpc::internal::RpcMethod& method,
                     grpc::ByteBuffer request, Clock::time_point deadline, RawUnaryDone done);

// Copies `x` (already validated) into a request and starts the call; `done` runs once on
// a gRPC thread with the result.
void StartAsyncScaleShift(std::shared_ptr<ClientCore> core, const TensorView& x, double alpha,
                          double beta, Client::ScaleShiftCallback done, const CallOptions& options);

}  // namespace myops::client::internal

#endif  // MYOPS_CLIENT_SRC_ASYNC_CALL_H_
