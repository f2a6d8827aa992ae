// ResponseWatch (frontends/grpc/response_watch.h) with calls of its own: a watched call
// not done within the timeout is cancelled once and counted; one done in time never is;
// and the hand-over of a call's deletion when OnDone meets the cancel, on the watch's
// thread and on another one. The real reactors under it are tested against the real
// server in unary_stall_test.cc.
#include "frontends/grpc/response_watch.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <thread>

namespace myops::server {
namespace {

using std::chrono::milliseconds;

// A call that records its cancel. With `done_in_cancel`, its Cancel runs OnDone's step
// itself (as gRPC may when the cancel completes the call at once); with `hold`, its
// Cancel waits until `hold` is set.
class FakeCall : public ResponseWatch::Call {
 public:
  FakeCall(ResponseWatch* watch, std::atomic<bool>* deleted) : watch_(watch), deleted_(deleted) {}
  ~FakeCall() override {
    if (deleted_ != nullptr) deleted_->store(true);
  }

  std::atomic<int> cancels{0};
  std::atomic<bool> in_cancel{false};
  std::atomic<bool> cancel_returned{false};
  bool done_in_cancel = false;
  std::atomic<bool>* hold = nullptr;
  std::atomic<int> done_in_cancel_result{-1};

 private:
  void Cancel() override {
    cancels.fetch_add(1);
    in_cancel.store(true);
    if (done_in_cancel) done_in_cancel_result.store(watch_->Done(this) ? 1 : 0);
    while (hold != nullptr && !hold->load()) std::this_thread::sleep_for(milliseconds(1));
    cancel_returned.store(true);
  }

  ResponseWatch* const watch_;
  std::atomic<bool>* const deleted_;
};

// Polls `condition` for up to 5 s.
template <typename F>
bool Eventually(F condition) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!condition() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(milliseconds(2));
  }
  return condition();
}

TEST(ResponseWatchTest, ACallNotDoneWithinTheTimeoutIsCancelledOnceAndCounted) {
  std::atomic<int> stalls{0};
  ResponseWatch watch(milliseconds(40), [&stalls] { stalls.fetch_add(1); });
  FakeCall call(&watch, nullptr);
  const auto watched = std::chrono::steady_clock::now();
  watch.Watch(&call);
  ASSERT_TRUE(Eventually([&] { return call.cancel_returned.load(); }));
  EXPECT_GE(std::chrono::steady_clock::now() - watched, milliseconds(40));
  std::this_thread::sleep_for(milliseconds(100));  // further ticks do not cancel it again
  EXPECT_EQ(call.cancels.load(), 1);
  EXPECT_EQ(stalls.load(), 1);
  EXPECT_TRUE(watch.Done(&call));  // OnDone after the cancel: the reactor deletes itself
}

TEST(ResponseWatchTest, ACallDoneInTimeIsNeverCancelled) {
  std::atomic<int> stalls{0};
  ResponseWatch watch(milliseconds(40), [&stalls] { stalls.fetch_add(1); });
  FakeCall first(&watch, nullptr), second(&watch, nullptr), third(&watch, nullptr);
  watch.Watch(&first);
  watch.Watch(&second);
  watch.Watch(&third);
  EXPECT_TRUE(watch.Done(&second));  // from the middle of the list
  EXPECT_TRUE(watch.Done(&first));   // its head
  ASSERT_TRUE(Eventually([&] { return third.cancels.load() == 1; }));
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_EQ(first.cancels.load(), 0);
  EXPECT_EQ(second.cancels.load(), 0);
  EXPECT_EQ(stalls.load(), 1);
  EXPECT_TRUE(watch.Done(&third));
}

TEST(ResponseWatchTest, OnDoneInsideTheCancelLeavesTheDeleteToTheWatch) {
  ResponseWatch watch(milliseconds(20), [] {});
  std::atomic<bool> deleted{false};
  auto* call = new FakeCall(&watch, &deleted);
  call->done_in_cancel = true;
  watch.Watch(call);
  ASSERT_TRUE(Eventually([&] { return deleted.load(); }));  // the watch deleted it
}

TEST(ResponseWatchTest, OnDoneOnAnotherThreadWaitsUntilTheCancelReturns) {
  ResponseWatch watch(milliseconds(20), [] {});
  std::atomic<bool> hold{false};
  FakeCall call(&watch, nullptr);
  call.hold = &hold;
  watch.Watch(&call);
  ASSERT_TRUE(Eventually([&] { return call.in_cancel.load(); }));
  auto done = std::async(std::launch::async, [&] {
    const bool delete_now = watch.Done(&call);
    return delete_now && call.cancel_returned.load();
  });
  // Done must not return while the cancel still uses the call.
  EXPECT_EQ(done.wait_for(milliseconds(100)), std::future_status::timeout);
  hold.store(true);
  EXPECT_TRUE(done.get());
}

TEST(ResponseWatchTest, AWatchThatSleptWakesForTheNextCall) {
  std::atomic<int> stalls{0};
  ResponseWatch watch(milliseconds(40), [&stalls] { stalls.fetch_add(1); });
  std::this_thread::sleep_for(milliseconds(300));  // past its idle ticks: asleep
  FakeCall call(&watch, nullptr);
  watch.Watch(&call);
  ASSERT_TRUE(Eventually([&] { return call.cancels.load() == 1; }));
  EXPECT_EQ(stalls.load(), 1);
  EXPECT_TRUE(watch.Done(&call));
}

}  // namespace
}  // namespace myops::server
