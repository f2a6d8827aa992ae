// ResponseWatch: one thread cancels the calls whose responses stalled (see response_watch.h).
#include "frontends/grpc/response_watch.h"

#include <pthread.h>

#include <algorithm>
#include <utility>
#include <vector>

namespace myops::server {
namespace {

// Ticks without a watched call before the thread sleeps until the next Watch: a server
// between bursts does not wake it per call, an idle one does not wake at all.
constexpr int kIdleTicks = 8;

}  // namespace

ResponseWatch::ResponseWatch(std::chrono::milliseconds timeout, std::function<void()> on_stall)
    : timeout_(timeout),
      tick_(std::clamp(timeout / 4, std::chrono::milliseconds(10), std::chrono::milliseconds(250))),
      on_stall_(std::move(on_stall)),
      thread_([this] { Run(); }) {}

ResponseWatch::~ResponseWatch() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    wake_.Signal();
  }
  thread_.join();
}

void ResponseWatch::Watch(Call* call) {
  absl::MutexLock lock(&mu_);
  call->stage_ = Call::Stage::kWatched;
  call->deadline_ = std::chrono::steady_clock::now() + timeout_;
  call->prev_ = tail_;
  call->next_ = nullptr;
  (tail_ != nullptr ? tail_->next_ : head_) = call;
  tail_ = call;
  if (sleeping_) wake_.Signal();
}

bool ResponseWatch::Done(Call* call) {
  absl::MutexLock lock(&mu_);
  switch (call->stage_) {
    case Call::Stage::kWatched:
      Unlink(call);
      call->stage_ = Call::Stage::kIdle;
      return true;
    case Call::Stage::kCancelling:
      if (std::this_thread::get_id() == thread_.get_id()) {  // OnDone inside the cancel
        call->stage_ = Call::Stage::kDoneWhileCancelling;
        return false;
      }
      mu_.Await(absl::Condition(
          +[](Call* c) { return c->stage_ != Call::Stage::kCancelling; }, call));
      return true;
    default:  // never watched (finished with an error status), or cancelled
      return true;
  }
}

void ResponseWatch::Unlink(Call* call) {
  (call->prev_ != nullptr ? call->prev_->next_ : head_) = call->next_;
  (call->next_ != nullptr ? call->next_->prev_ : tail_) = call->prev_;
  call->prev_ = call->next_ = nullptr;
}

void ResponseWatch::Run() {
  pthread_setname_np(pthread_self(), "myops-watch");
  std::vector<Call*> expired;
  int idle = 0;
  mu_.Lock();
  while (!stopping_) {
    if (head_ == nullptr && idle >= kIdleTicks) {
      sleeping_ = true;
      wake_.Wait(&mu_);
      sleeping_ = false;
      idle = 0;
      continue;
    }
    wake_.WaitWithTimeout(&mu_, absl::FromChrono(tick_));
    idle = head_ == nullptr ? idle + 1 : 0;
    const auto now = std::chrono::steady_clock::now();
    while (head_ != nullptr && head_->deadline_ <= now) {
      Call* call = head_;
      Unlink(call);
      call->stage_ = Call::Stage::kCancelling;
      expired.push_back(call);
    }
    if (expired.empty()) continue;
    mu_.Unlock();
    for (Call* call : expired) {
      on_stall_();
      call->Cancel();
    }
    mu_.Lock();
    std::vector<Call*> finished;
    for (Call* call : expired) {
      if (call->stage_ == Call::Stage::kDoneWhileCancelling) {
        finished.push_back(call);
      } else {
        call->stage_ = Call::Stage::kCancelled;  // wakes a Done waiting for the cancel
      }
    }
    expired.clear();
    if (finished.empty()) continue;
    mu_.Unlock();
    for (Call* call : finished) delete call;
    mu_.Lock();
  }
  mu_.Unlock();
}

}  // namespace myops::server
