// The gRPC service with a gated executor that holds jobs until the test releases them:
// admission (in-flight limit), graceful shutdown with requests in flight, health.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include "test_server.h"

namespace myops::server {
namespace {

using testing::MakeRequest;

// Holds submitted jobs; Release(n) runs n of them (copying input to output).
class GatedExecutor final : public Executor {
 public:
  GatedExecutor() : devices_({{DeviceKind::kCpu, 0}}) { info_.workers = 1; }
  const DeviceSet& devices() const override { return devices_; }
  const RuntimeInfo& info() const override { return info_; }
  void Submit(Job job, JobDone done) override {
    std::lock_guard<std::mutex> lock(mu_);
    held_.push_back({std::move(job), std::move(done)});
    cv_.notify_all();
  }
  void Shutdown() override { Release(1 << 30); }

  std::atomic<int> cancelled_seen_{0};

  // Whether the oldest held job's cancellation check reports true.
  bool OldestCancelled() {
    std::lock_guard<std::mutex> lock(mu_);
    return !held_.empty() && held_.front().first.is_cancelled && held_.front().first.is_cancelled();
  }

  void WaitForHeld(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return held_.size() >= n; });
  }
  void Release(int n) {
    std::deque<std::pair<Job, JobDone>> run;
    {
      std::lock_guard<std::mutex> lock(mu_);
      while (n-- > 0 && !held_.empty()) {
        run.push_back(std::move(held_.front()));
        held_.pop_front();
      }
    }
    for (auto& [job, done] : run) {
      if (job.is_cancelled && job.is_cancelled()) {
        cancelled_seen_++;
        done(absl::CancelledError("cancelled"), JobTiming{});
        continue;
      }
      std::memcpy(job.output.data, job.input.data, static_cast<size_t>(job.input.bytes));
      done(absl::OkStatus(), JobTiming{1, 2, "cpu"});
    }
  }

 private:
  DeviceSet devices_;
  RuntimeInfo info_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<Job, JobDone>> held_;
};

struct AsyncCall {
  grpc::ClientContext ctx;
  myops::v1::ScaleShiftRequest request;
  myops::v1::ScaleShiftResponse response;
  grpc::Status status;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;

  void Start(myops::v1::Myops::Stub* stub) {
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    stub->async()->ScaleShift(&ctx, &request, &response, [this](grpc::Status s) {
      std::lock_guard<std::mutex> lock(mu);
      status = s;
      done = true;
      cv.notify_all();
    });
  }
  grpc::Status Wait() {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return done; });
    return status;
  }
};

TEST(ServiceTest, RequestsBeyondTheInflightLimitGetResourceExhaustedAtOnce) {
  auto options = testing::LoopbackOptions();
  options.limits.max_inflight = 3;
  auto gate = std::make_unique<GatedExecutor>();
  GatedExecutor* g = gate.get();
  auto t = testing::StartServer(options, std::move(gate));
  ASSERT_TRUE(t.server);

  std::vector<std::unique_ptr<AsyncCall>> held;
  for (int i = 0; i < 3; ++i) {
    held.push_back(std::make_unique<AsyncCall>());
    held.back()->request = MakeRequest(DType::kFloat32, {8}, 1.0, 0.0, i);
    held.back()->Start(t.stub.get());
  }
  g->WaitForHeld(3);
  grpc::ClientContext ctx;
  myops::v1::ScaleShiftResponse response;
  auto over = t.stub->ScaleShift(&ctx, MakeRequest(DType::kFloat32, {8}, 1.0, 0.0), &response);
  EXPECT_EQ(over.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(over.error_message().find("limit of 3 requests in flight"), std::string::npos);

  g->Release(3);
  for (auto& c : held) {
    ASSERT_TRUE(c->Wait().ok()) << c->status.error_message();
    EXPECT_EQ(c->response.output().data(), c->request.input().data());
  }
  // Capacity is back once those finished.
  grpc::ClientContext again;
  std::thread release([g] {
    g->WaitForHeld(1);
    g->Release(1);
  });
  EXPECT_TRUE(
      t.stub->ScaleShift(&again, MakeRequest(DType::kFloat32, {8}, 1.0, 0.0), &response).ok());
  release.join();
}

TEST(ServiceTest, GracefulShutdownCompletesInflightRequestsAndRefusesNewOnes) {
  auto gate = std::make_unique<GatedExecutor>();
  GatedExecutor* g = gate.get();
  auto t = testing::StartServer(testing::LoopbackOptions(), std::move(gate));
  ASSERT_TRUE(t.server);
  EXPECT_EQ(testing::HealthStatus(t.channel, ""), 1);
  EXPECT_EQ(testing::HealthStatus(t.channel, "myops.v1.Myops"), 1);

  std::vector<std::unique_ptr<AsyncCall>> inflight;
  for (int i = 0; i < 5; ++i) {
    inflight.push_back(std::make_unique<AsyncCall>());
    inflight.back()->request = MakeRequest(DType::kFloat64, {1000}, 2.0, 1.0, i);
    inflight.back()->Start(t.stub.get());
  }
  g->WaitForHeld(5);

  std::thread stopper([&] { t.server->Shutdown(std::chrono::seconds(30)); });
  // Health stops reporting SERVING (probes fail) while the server drains.
  int health = 1;
  for (int i = 0; i < 500 && health == 1; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    health = testing::HealthStatus(t.channel, "");
  }
  EXPECT_NE(health, 1);
  // A new connection is refused while the server drains.
  auto fresh = testing::Connect(t.address);
  auto fresh_stub = myops::v1::Myops::NewStub(fresh);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
  myops::v1::ScaleShiftResponse response;
  auto refused = fresh_stub->ScaleShift(&ctx, MakeRequest(DType::kFloat32, {4}, 1, 0), &response);
  EXPECT_FALSE(refused.ok());

  g->Release(5);
  for (auto& c : inflight) {
    ASSERT_TRUE(c->Wait().ok()) << c->status.error_message();
    EXPECT_EQ(c->response.output().data(), c->request.input().data());
    EXPECT_EQ(c->response.request_id(), c->request.request_id());
  }
  stopper.join();
}

TEST(ServiceTest, ClientCancellationReachesTheExecutor) {
  auto gate = std::make_unique<GatedExecutor>();
  GatedExecutor* g = gate.get();
  auto t = testing::StartServer(testing::LoopbackOptions(), std::move(gate));
  ASSERT_TRUE(t.server);
  AsyncCall call;
  call.request = MakeRequest(DType::kFloat32, {8}, 1.0, 0.0);
  call.Start(t.stub.get());
  g->WaitForHeld(1);
  call.ctx.TryCancel();
  EXPECT_EQ(call.Wait().error_code(), grpc::StatusCode::CANCELLED);
  // The job sees the cancellation when it would run, so it is not computed.
  bool seen = false;
  for (int i = 0; i < 400 && !seen; ++i) {
    seen = g->OldestCancelled();
    if (!seen) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_TRUE(seen);
  g->Release(1);
  EXPECT_EQ(g->cancelled_seen_.load(), 1);
}

}  // namespace
}  // namespace myops::server
