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
#include "frontends/grpc/status.h"
#include "pipeline/pipeline.h"
#include "util/clock.h"

namespace myops::server {

template <typename State>
class WatchedUnaryReactor final : public grpc::ServerUnaryReactor, private ResponseWatch::Call {
 public:
  // `request` and `response`: the handler's, gRPC's until the call is finished;
  // `received`: when the handler got the request.
  WatchedUnaryReactor(grpc::CallbackServerContext* context, ResponseWatch* watch,
                      const grpc::ByteBuffer* request, grpc::ByteBuffer* response,
                      Clock::time_point received)
      : request(request),
        response(response),
        received(received),
        context_(context),
        watch_(watch) {}

  State state;
  // For what finishes the call after its handler returned (a request prepared on a
  // worker, Pipeline::Prepare).
  const grpc::ByteBuffer* const request;
  grpc::ByteBuffer* const response;
  const Clock::time_point received;
  grpc::CallbackServerContext* context() const { return context_; }

  // Finishes the call with `refused` (a request that did not parse or decode), counted
  // in `rpc`.
  void Refuse(Pipeline* pipeline, Metrics::Rpc* rpc, const absl::Status& refused) {
    pipeline->metrics().Record(rpc, refused, {}, 0);
    Finish(ToGrpcStatus(refused));
  }

  // Pipeline::ProcessCall of `call` (part of `state`) from the call's receipt, with its
  // deadline and cancellation.
  void Process(Pipeline* pipeline, CallState* call, Pipeline::Done done) {
    grpc::CallbackServerContext* context = context_;
    pipeline->ProcessCall(
        call, received, context->deadline(), [context] { return context->IsCancelled(); },
        std::move(done));
  }

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
