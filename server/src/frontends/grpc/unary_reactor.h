// The reactor of a unary call that holds memory until its response is sent (myops.v1's
// Call and ScaleShift, the Open Inference Protocol's ModelInfer): it owns the call's
// state, and once the call is finished gives the client --stall-timeout-ms to take the
// response. A client that does not (its HTTP/2 window stays shut: it never reads) would
// otherwise keep the state, and the memory budget it holds, for the connection's life;
// the call is then cancelled, which ends it (OnDone) and returns the memory.
//
// Deletes itself: in OnDone, or, when its alarm is set then, in the alarm's callback
// (which gRPC runs exactly once, fired or cancelled). mu_ guards what is annotated so.
#pragma once

#include <grpcpp/alarm.h>
#include <grpcpp/grpcpp.h>

#include <chrono>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "pipeline/pipeline.h"

namespace myops::server {

template <typename State>
class WatchedUnaryReactor final : public grpc::ServerUnaryReactor {
 public:
  WatchedUnaryReactor(grpc::CallbackServerContext* context, Pipeline* pipeline)
      : context_(context), pipeline_(pipeline) {}

  State state;

  // Finishes the call with `status` and, when it is OK (a response message is sent,
  // which the client's flow control can hold; a status alone cannot be held), watches
  // the response leave.
  void FinishWatched(const grpc::Status& status) {
    if (!status.ok()) return Finish(status);
    {
      absl::MutexLock lock(&mu_);
      alarm_set_ = true;
    }
    alarm_.Set(std::chrono::system_clock::now() +
                   std::chrono::milliseconds(pipeline_->limits().stall_timeout_ms),
               [this](bool fired) { OnAlarm(fired); });
    Finish(status);
  }

  void OnDone() override {
    {
      absl::MutexLock lock(&mu_);
      done_ = true;
      if (alarm_set_) {  // Its callback, which gRPC still runs, deletes this.
        alarm_.Cancel();
        return;
      }
    }
    delete this;
  }

 private:
  void OnAlarm(bool fired) {
    bool cancel = false;
    {
      absl::MutexLock lock(&mu_);
      // Cancelling, after the unlock: the alarm counts as set until then, so that an
      // OnDone meanwhile (even one the cancel runs) leaves the delete to this.
      cancel = fired && !done_;
      if (!cancel) {
        alarm_set_ = false;
        if (!done_) return;  // cancelled at shutdown: OnDone, to come, deletes
      }
    }
    if (cancel) {
      pipeline_->metrics().ResponseStalled();
      context_->TryCancel();
      absl::MutexLock lock(&mu_);
      alarm_set_ = false;
      if (!done_) return;
    }
    delete this;
  }

  grpc::CallbackServerContext* const context_;
  Pipeline* const pipeline_;
  grpc::Alarm alarm_;
  absl::Mutex mu_;
  bool alarm_set_ ABSL_GUARDED_BY(mu_) = false;  // its callback has not run yet
  bool done_ ABSL_GUARDED_BY(mu_) = false;       // OnDone has run
};

}  // namespace myops::server
