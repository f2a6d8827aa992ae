// Asynchronous unary calls over the gRPC callback API (ScaleShift, Call, ListOperators,
// ServerInfo, health), with the retries of the client's RetryPolicy scheduled on gRPC
// alarms (no thread blocks while waiting), and their cancellation state (AsyncCall).
#ifndef MYOPS_CLIENT_SRC_ASYNC_CALL_H_
#define MYOPS_CLIENT_SRC_ASYNC_CALL_H_

#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include <grpcpp/client_context.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/status.h>

#include "absl/base/thread_annotations.h"
#include "myops/client/client.h"
#include "myops/client/options.h"
#include "myops/client/tensor.h"
#include "retry.h"

namespace myops::client::internal {

struct ClientCore;

// The cancellation state one asynchronous call shares with its AsyncCall handles: whether
// it was cancelled and the context of its attempt in flight. Thread-safe. TryCancel runs
// outside the lock (gRPC may run the call's callback inline in it, and the callback
// detaches the context), on a context kept alive by the shared_ptr.
class AsyncCallState {
 public:
  // Cancels the attempt in flight, if any, and every later one.
  void Cancel();

  // Attaches the context of an attempt about to start; cancels it at once when the call
  // was cancelled already (gRPC then ends the attempt with CANCELLED as it starts).
  void Attach(std::shared_ptr<grpc::ClientContext> context);

  // Detaches the context of an attempt that has ended.
  void Detach();

  bool cancelled() const;

 private:
  mutable std::mutex mu_;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  std::shared_ptr<grpc::ClientContext> context_ ABSL_GUARDED_BY(mu_);
};

// Receives a raw call's final status, (when OK) its response bytes, and the replica that
// answered (ServingReplica; "" if none or the call failed).
using RawUnaryDone = std::function<void(grpc::Status, grpc::ByteBuffer, std::string)>;

// Starts the raw unary call of `method` (one of client_core.h's, through the generic stub;
// a string constant) with `request`, retried as the
// blocking calls are until `deadline` (not after a cancellation); `done` runs once on a
// gRPC thread (or on the thread cancelling it), after the call has released its request.
// The call keeps `core` alive until then. Returns its cancellation state.
std::shared_ptr<AsyncCallState> StartAsyncUnary(std::shared_ptr<ClientCore> core,
                                                const char* method, grpc::ByteBuffer request,
                                                Clock::time_point deadline, RawUnaryDone done);

// Copies `x` (already validated) into a request and starts the call; `done` runs once on
// a gRPC thread with the result.
std::shared_ptr<AsyncCallState> StartAsyncScaleShift(std::shared_ptr<ClientCore> core,
                                                     const TensorView& x, double alpha, double beta,
                                                     Client::ScaleShiftCallback done,
                                                     const CallOptions& options);

}  // namespace myops::client::internal

#endif  // MYOPS_CLIENT_SRC_ASYNC_CALL_H_
