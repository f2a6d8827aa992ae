// The watch over finished unary calls whose response is still being sent: a call whose
// client has not taken its response within the stall timeout (--stall-timeout-ms) is
// cancelled, which ends it and returns the memory budget it holds. A client that never
// reads (its HTTP/2 window stays shut) would otherwise keep a call, and its memory, for
// the connection's life.
//
// One thread per watch serves every call, instead of a timer per call: a gRPC alarm runs
// its callback on gRPC's executor thread, and with the call's OnDone there (reactors that
// are not inlineable) that was two thread hand-offs per call (bench/README.md, "Issue 28:
// CPU per small request"). Calls are kept in the order they were watched, which is the
// order of their deadlines (one timeout per watch); the thread ticks every quarter of the
// timeout (at least 10 ms, at most 250 ms) while calls are or were recently watched, and
// sleeps otherwise. So a stalled call is cancelled between 1 and 1.25 timeouts after its
// response began.
//
// Thread-safety: Watch and Done may be called from any thread; everything a watch and its
// calls share is guarded by mu_. Ownership: a watched call belongs to gRPC and its
// reactor; the watch only ever deletes a call whose OnDone ran while the watch was
// cancelling it (Done returned false), and it must outlive every call it watched (the
// service that owns it outlives the gRPC server).
#pragma once

#include <chrono>
#include <functional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace myops::server {

class ResponseWatch {
 public:
  // A call the watch can hold: WatchedUnaryReactor (unary_reactor.h).
  class Call {
   public:
    virtual ~Call() = default;

   protected:
    // Cancels the call (its client left the response untaken). Called on the watch's
    // thread, not under its lock, at most once, and before Done returns for this call.
    virtual void Cancel() = 0;

   private:
    friend class ResponseWatch;
    enum class Stage { kIdle, kWatched, kCancelling, kDoneWhileCancelling, kCancelled };
    // All guarded by the watch's mu_.
    Stage stage_ = Stage::kIdle;
    Call* prev_ = nullptr;
    Call* next_ = nullptr;
    std::chrono::steady_clock::time_point deadline_;
  };

  // `on_stall` runs once per call cancelled (on the watch's thread): the metrics' count.
  ResponseWatch(std::chrono::milliseconds timeout, std::function<void()> on_stall);
  ~ResponseWatch();
  ResponseWatch(const ResponseWatch&) = delete;
  ResponseWatch& operator=(const ResponseWatch&) = delete;

  // `call` has finished and its response is being sent: cancel it if it is not done
  // within the timeout. At most once per call.
  void Watch(Call* call);

  // From the call's OnDone. True: the caller deletes the call now. False: the watch is
  // cancelling it on its own thread (this is that thread) and deletes it when the cancel
  // returns. When the watch is cancelling it on its thread and this is another thread,
  // waits for the cancel to return (gRPC frees the call's context after OnDone, and the
  // cancel uses it), then returns true.
  bool Done(Call* call);

 private:
  void Run();
  void Unlink(Call* call) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::chrono::milliseconds timeout_;
  const std::chrono::milliseconds tick_;
  const std::function<void()> on_stall_;
  absl::Mutex mu_;
  absl::CondVar wake_;
  Call* head_ ABSL_GUARDED_BY(mu_) = nullptr;  // the first deadline
  Call* tail_ ABSL_GUARDED_BY(mu_) = nullptr;
  bool sleeping_ ABSL_GUARDED_BY(mu_) = false;  // the thread waits for a call, untimed
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;  // last: started once the rest is set
};

}  // namespace myops::server
