// The reactor of a unary call that holds memory until its response is sent (myops.v1's
// Call and ScaleShift, the Open Inference Protocol's ModelInfer): it owns the call's
// state, and once the call is finished with a response, its service's ResponseWatch
// (response_watch.h) gives the client --stall-timeout-ms to take it; a client that does
// not is cancelled, which ends the call (OnDone) and returns the memory.
//
// Deletes itself in OnDone, or, when OnDone runs inside the watch's cancel, the watch
// deletes it. OnDone is inlineable: it runs on the thread that completes the call instead
// of being handed to gRPC's executor thread (it takes the watch's lock, briefly, and frees
// the state).
#pragma once

#include <grpcpp/grpcpp.h>

#include "frontends/grpc/response_watch.h"
#include "pipeline/pipeline.h"

namespace myops::server {

template <typename State>
class WatchedUnaryReactor final : public grpc::ServerUnaryReactor, private ResponseWatch::Call {
 public:
  WatchedUnaryReactor(grpc::CallbackServerContext* context, ResponseWatch* watch)
      : context_(context), watch_(watch) {}

  State state;

  // Finishes the call with `status` and, when it is OK (a response message is sent,
  // which the client's flow control can hold; a status alone cannot be held), watches
  // the response leave.
  void FinishWatched(const grpc::Status& status) {
    if (status.ok()) watch_->Watch(this);
    Finish(status);
  }

  void OnDone() override {
    if (watch_->Done(this)) delete this;
  }

  bool InternalInlineable() override { return true; }

 private:
  void Cancel() override { context_->TryCancel(); }

  grpc::CallbackServerContext* const context_;
  ResponseWatch* const watch_;
};

// The watch a service's WatchedUnaryReactors share: the pipeline's stall timeout, and
// each cancel counted in its metrics.
inline ResponseWatch MakeResponseWatch(Pipeline* pipeline) {
  return ResponseWatch(std::chrono::milliseconds(pipeline->limits().stall_timeout_ms),
                       [pipeline] { pipeline->metrics().ResponseStalled(); });
}

}  // namespace myops::server
