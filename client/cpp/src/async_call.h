// Asynchronous ScaleShift over the gRPC callback API, with the retries of the client's
// RetryPolicy scheduled on gRPC alarms (no thread blocks while waiting).
#ifndef MYOPS_CLIENT_SRC_ASYNC_CALL_H_
#define MYOPS_CLIENT_SRC_ASYNC_CALL_H_

#include <memory>

#include "myops/client/client.h"
#include "myops/client/options.h"
#include "myops/client/tensor.h"

namespace myops::client::internal {

struct ClientCore;

// Copies `x` (already validated) into a request and starts the call; `done` runs once on
// a gRPC thread with the result. The call keeps `core` alive until then.
void StartAsyncScaleShift(std::shared_ptr<ClientCore> core, const TensorView& x, double alpha,
                          double beta, Client::ScaleShiftCallback done, const CallOptions& options);

}  // namespace myops::client::internal

#endif  // MYOPS_CLIENT_SRC_ASYNC_CALL_H_
