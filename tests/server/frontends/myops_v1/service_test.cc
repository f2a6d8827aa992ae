// The gRPC service with a gated executor that holds jobs until the test releases them:
// admission (in-flight limit), graceful shutdown with requests in flight, health.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include "frontends/myops_v1/scale_shift.h"
#include "frontends/myops_v1/service.h"
#include "myops/wire/tensor_wire.h"
#include "runtime/op_registry.h"
#include "test_server.h"

namespace myops::server {
namespace {

using testing::MakeRequest;

// Holds submitted jobs; Release(n) runs n of them (copying input to output).
class GatedExecutor final : public Executor {
 public:
  GatedExecutor() : devices_({{DeviceKind::kCpu, 0}}) {
    info_.workers = 1;
    info_.registry = *OpRegistry::Build(*OpPatterns::Parse("myops::*"));
  }
  const DeviceSet& devices() const override { return devices_; }
  const RuntimeInfo& info() const override { return info_; }
  void Submit(Job job, JobDone done) override {
    std::lock_guard<std::mutex> lock(mu_);
    held_.push_back({std::move(job), std::move(done)});
    ++submitted_;
    cv_.notify_all();
  }
  void Shutdown() override { Release(1 << 30); }

  std::atomic<int> cancelled_seen_{0};

  // Whether the oldest held job's cancellation check reports true.
  bool OldestCancelled() {
    std::lock_guard<std::mutex> lock(mu_);
    return !held_.empty() && held_.front().first.is_cancelled && held_.front().first.is_cancelled();
  }

  size_t HeldCount() {
    std::lock_guard<std::mutex> lock(mu_);
    return held_.size();
  }
  int64_t SubmittedCount() {
    std::lock_guard<std::mutex> lock(mu_);
    return submitted_;
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
      // ScaleShift's call: its input into result 0's buffer, as if alpha were 1, beta 0.
      OpCall& call = *job.call;
      const TensorView& input = call.args.at(0)->tensor;
      std::memcpy(call.result_buffer.data, input.data, static_cast<size_t>(input.bytes));
      Value result;
      result.kind = Value::Kind::kTensor;
      result.tensor = input;
      result.tensor.data = call.result_buffer.data;
      call.results = {std::move(result)};
      done(absl::OkStatus(), JobTiming{1, 2, "cpu"});
    }
  }

 private:
  DeviceSet devices_;
  RuntimeInfo info_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<Job, JobDone>> held_;
  int64_t submitted_ = 0;
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

// The kernels load whole elements, so the input handed to them is aligned to its item
// size even when its bytes sit at an odd offset of the received slice (UBSan reported
// misaligned float loads in the CPU kernel before); the copy is reserved too. Bytes at
// any offset are aligned for uint8 and stay where they are.
TEST(ScaleShiftStateTest, InputIsRealignedForTheKernels) {
  const float values[4] = {1.5f, -2.0f, 3.25f, 4.0f};
  for (myops::v1::DType dtype : {myops::v1::DTYPE_FLOAT32, myops::v1::DTYPE_UINT8}) {
    const bool floats = dtype == myops::v1::DTYPE_FLOAT32;
    SCOPED_TRACE(floats ? "float32" : "uint8");
    myops::v1::ScaleShiftRequest request;
    request.mutable_input()->set_dtype(dtype);
    request.mutable_input()->add_shape(floats ? 4 : 16);
    request.mutable_input()->set_data(std::string(reinterpret_cast<const char*>(values), 16));
    // 0a 17 | 08 01 | 12 01 04 | 1a 10 | data: the data starts at offset 9 of the slice.
    grpc::Slice slice(request.SerializeAsString());
    ScaleShiftState state;
    ASSERT_TRUE(wire::ParseWithTensorData(grpc::ByteBuffer(&slice, 1),
                                          myops::v1::ScaleShiftRequest::kInputFieldNumber,
                                          &state.request, &state.input)
                    .ok());
    ASSERT_NE(reinterpret_cast<uintptr_t>(state.input.contiguous()) % 4, 0u);
    absl::StatusOr<int64_t> held = CheckScaleShift(TensorLimits(), &state);
    ASSERT_TRUE(held.ok()) << held.status();
    // Received, gathered (float32 only) and output bytes.
    EXPECT_EQ(*held, floats ? 48 : 32);
    BindScaleShift(0, &state);
    const void* data = state.args.at(0).value.tensor.data;
    EXPECT_EQ(data == state.input.contiguous(), !floats);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(data) % (floats ? 4 : 1), 0u);
    EXPECT_EQ(std::memcmp(data, values, sizeof(values)), 0);
    // Result 0 goes straight into the response's slice, with the input's layout.
    EXPECT_EQ(state.call.result_buffer.data, state.output.begin());
    EXPECT_EQ(state.call.result_buffer.bytes, 16);
    ASSERT_TRUE(state.call.result_buffer.layout.has_value());
    EXPECT_EQ(state.call.result_buffer.layout->shape, std::vector<int64_t>{floats ? 4 : 16});
  }
}

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
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::UNAVAILABLE) << refused.error_message();
  // So is a new call on a connection that was open before the shutdown.
  grpc::ClientContext late;
  late.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
  auto late_status = t.stub->ScaleShift(&late, MakeRequest(DType::kFloat32, {4}, 1, 0), &response);
  EXPECT_EQ(late_status.error_code(), grpc::StatusCode::UNAVAILABLE) << late_status.error_message();

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

// Waits (bounded) until `server` holds no budget: reservations are released when gRPC is
// done with each call, a moment after the client has its response.
int64_t HeldWhenSettled(const Server& server) {
  for (int i = 0; i < 1000 && server.pipeline().budget().held() != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return server.pipeline().budget().held();
}

TEST(MemoryBudgetTest, ReservesAllOrNothingAndReleasesOnce) {
  MemoryBudget budget(100);
  BudgetReservation a, b, c;
  EXPECT_TRUE(budget.TryReserve(60, &a));
  EXPECT_FALSE(budget.TryReserve(41, &b));
  EXPECT_EQ(b.bytes(), 0);
  EXPECT_TRUE(budget.TryReserve(40, &b));
  EXPECT_EQ(budget.held(), 100);
  EXPECT_FALSE(budget.TryReserve(1, &c));
  EXPECT_FALSE(budget.TryReserve(-1, &c));
  c = std::move(a);  // Moving keeps the bytes held, once.
  EXPECT_EQ(budget.held(), 100);
  c.Reset();
  EXPECT_EQ(budget.held(), 40);
  {
    BudgetReservation moved(std::move(b));
    EXPECT_EQ(budget.held(), 40);
  }
  EXPECT_EQ(budget.held(), 0);
  std::vector<std::thread> threads;
  std::atomic<int> granted{0};
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      for (int j = 0; j < 10000; ++j) {
        BudgetReservation r;
        if (budget.TryReserve(30, &r)) granted++;
        EXPECT_LE(budget.held(), 100);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(budget.held(), 0);
  EXPECT_GT(granted.load(), 0);
  EXPECT_GT(MemoryLimitBytes(), int64_t{1} << 26);
  EXPECT_EQ(DefaultMemoryBudgetBytes(), MemoryLimitBytes() / 2);
}

TEST(ServiceTest, RequestsBeyondTheMemoryBudgetGetResourceExhausted) {
  auto options = testing::LoopbackOptions();
  options.limits.max_inflight_bytes = 256 << 10;
  auto gate = std::make_unique<GatedExecutor>();
  GatedExecutor* g = gate.get();
  auto t = testing::StartServer(options, std::move(gate));
  ASSERT_TRUE(t.server);
  EXPECT_EQ(t.server->pipeline().budget().limit(), 256 << 10);

  // 40 KiB in, 40 KiB out (more when gathered from slices): at most 3 fit.
  std::vector<std::unique_ptr<AsyncCall>> held;
  grpc::Status over;
  for (int i = 0; i < 8 && over.ok(); ++i) {
    auto call = std::make_unique<AsyncCall>();
    call->request = MakeRequest(DType::kFloat32, {10 << 10}, 1.0, 0.0, i);
    call->Start(t.stub.get());
    // Either it is held (admitted) or it has finished (refused).
    for (int k = 0; k < 2000; ++k) {
      {
        std::lock_guard<std::mutex> lock(call->mu);
        if (call->done) break;
      }
      if (g->HeldCount() == held.size() + 1) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::lock_guard<std::mutex> lock(call->mu);
    if (call->done) {
      over = call->status;
    } else {
      EXPECT_LE(t.server->pipeline().budget().held(), 256 << 10);
      held.push_back(std::move(call));
    }
  }
  EXPECT_GE(held.size(), 1u);
  EXPECT_LE(held.size(), 3u);
  EXPECT_EQ(over.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(over.error_message().find("the server's memory budget is in use"), std::string::npos)
      << over.error_message();

  g->Release(1 << 20);
  for (auto& c : held) ASSERT_TRUE(c->Wait().ok()) << c->status.error_message();
  EXPECT_EQ(HeldWhenSettled(*t.server), 0);

  // A request that could never fit says so.
  grpc::ClientContext ctx;
  myops::v1::ScaleShiftResponse response;
  auto huge = t.stub->ScaleShift(&ctx, MakeRequest(DType::kFloat32, {64 << 10}, 1, 0), &response);
  EXPECT_EQ(huge.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(huge.error_message().find("more than the server's whole memory budget of 262144"),
            std::string::npos)
      << huge.error_message();
}

TEST(MemoryBudgetTest, AClientAccountBoundsItsReservations) {
  MemoryBudget budget(100);
  auto a = std::make_shared<ClientAccount>("a", 30);
  auto b = std::make_shared<ClientAccount>("b", 30);
  BudgetReservation r1, r2, r3, r4;
  EXPECT_TRUE(budget.TryReserve(20, &r1, a));
  EXPECT_FALSE(budget.TryReserve(11, &r2, a));  // over a's 30; the budget is untouched
  EXPECT_EQ(budget.held(), 20);
  EXPECT_EQ(a->held(), 20);
  EXPECT_TRUE(budget.TryReserve(30, &r3, b));
  EXPECT_TRUE(budget.TryReserve(50, &r4));      // no account: the budget only
  EXPECT_FALSE(budget.TryReserve(10, &r2, a));  // a has room, the budget has none
  EXPECT_EQ(a->held(), 20);
  r4.Reset();
  EXPECT_TRUE(budget.TryReserve(10, &r2, a));
  EXPECT_EQ(a->held(), 30);
  std::weak_ptr<ClientAccount> kept = a;
  a.reset();  // the reservations keep the account
  EXPECT_FALSE(kept.expired());
  r1.Reset();
  r2.Reset();
  EXPECT_TRUE(kept.expired());
  r3.Reset();
  EXPECT_EQ(b->held(), 0);
  EXPECT_EQ(budget.held(), 0);
}

// --max-client-share: one connection holds at most its share of the budget (RESOURCE_EXHAUSTED
// naming the flag beyond it), while a call on another connection is still admitted.
TEST(ServiceTest, OneConnectionHoldsAtMostItsShareOfTheBudget) {
  auto options = testing::LoopbackOptions();
  options.limits.max_inflight_bytes = 1 << 20;
  options.limits.max_client_share = 0.25;
  auto gate = std::make_unique<GatedExecutor>();
  GatedExecutor* g = gate.get();
  auto t = testing::StartServer(options, std::move(gate));
  ASSERT_TRUE(t.server);
  auto wait_settled = [&](AsyncCall* call, size_t held) {
    for (int k = 0; k < 2000; ++k) {
      {
        std::lock_guard<std::mutex> lock(call->mu);
        if (call->done) return;
      }
      if (g->HeldCount() == held) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  };
  // 40 KiB in, 40 KiB out: a few fit in the 256 KiB share, far fewer than the budget holds.
  std::vector<std::unique_ptr<AsyncCall>> held;
  grpc::Status over;
  for (int i = 0; i < 16 && over.ok(); ++i) {
    auto call = std::make_unique<AsyncCall>();
    call->request = MakeRequest(DType::kFloat32, {10 << 10}, 1.0, 0.0, i);
    call->Start(t.stub.get());
    wait_settled(call.get(), held.size() + 1);
    std::lock_guard<std::mutex> lock(call->mu);
    if (call->done) {
      over = call->status;
    } else {
      held.push_back(std::move(call));
    }
  }
  EXPECT_GE(held.size(), 1u);
  EXPECT_LE(held.size(), 3u);
  EXPECT_LE(t.server->pipeline().budget().held(), 256 << 10);
  EXPECT_EQ(over.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(over.error_message().find("--max-client-share 0.25"), std::string::npos)
      << over.error_message();

  // Another connection (its own subchannel) has its own share.
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  auto other = myops::v1::Myops::NewStub(
      grpc::CreateCustomChannel(t.address, grpc::InsecureChannelCredentials(), args));
  AsyncCall admitted;
  admitted.request = MakeRequest(DType::kFloat32, {10 << 10}, 1.0, 0.0, 99);
  admitted.Start(other.get());
  wait_settled(&admitted, held.size() + 1);
  {
    std::lock_guard<std::mutex> lock(admitted.mu);
    EXPECT_FALSE(admitted.done) << admitted.status.error_message();
  }
  EXPECT_EQ(g->HeldCount(), held.size() + 1);

  g->Release(1 << 20);
  for (auto& c : held) ASSERT_TRUE(c->Wait().ok()) << c->status.error_message();
  ASSERT_TRUE(admitted.Wait().ok()) << admitted.status.error_message();
  EXPECT_EQ(HeldWhenSettled(*t.server), 0);
}

// A client that writes requests on a stream and never reads the responses: the stream
// stops reading after 32 unanswered requests, its items hold the budget (never more than
// it), and everything is released when the client goes away.
TEST(ServiceTest, AStreamThatIsNeverReadStopsReadingAndReleasesEverything) {
  auto options = testing::LoopbackOptions();
  options.limits.max_inflight_bytes = 8 << 20;
  auto gate = std::make_unique<GatedExecutor>();
  GatedExecutor* g = gate.get();
  auto t = testing::StartServer(options, std::move(gate));
  ASSERT_TRUE(t.server);
  std::atomic<bool> stop{false};
  std::thread releaser([&] {  // Computes whatever the stream hands over.
    while (!stop) {
      g->Release(1 << 20);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  // A client whose receive window stays small (no BDP growth), so that the unread
  // responses stay on the server.
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(1 << 30);
  args.SetMaxSendMessageSize(1 << 30);
  args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  auto stub = myops::v1::Myops::NewStub(
      grpc::CreateCustomChannel(t.address, grpc::InsecureChannelCredentials(), args));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  auto stream = stub->ScaleShiftStream(&ctx);
  std::atomic<int> written{0};
  const auto request = MakeRequest(DType::kFloat32, {64 << 10}, 1.0, 0.0);  // 256 KiB
  std::thread writer([&] {
    for (int i = 0; i < 200; ++i) {
      if (!stream->Write(request)) return;
      written++;
    }
  });
  // The server has read what it will read once its executor saw no new job for a while.
  int64_t seen = -1;
  for (int quiet = 0; quiet < 50;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const int64_t now = g->SubmittedCount();
    quiet = now == seen ? quiet + 1 : 0;
    seen = now;
    EXPECT_LE(t.server->pipeline().budget().held(), 8 << 20);
  }
  EXPECT_LE(seen, 33);  // 32 outstanding, plus the one a read may have in progress
  EXPECT_GT(seen, 0);
  EXPECT_LT(written.load(), 200);                      // The client is pushed back on.
  EXPECT_GT(t.server->pipeline().budget().held(), 0);  // Unsent responses are counted.
  ctx.TryCancel();
  writer.join();
  stream->Finish();
  stop = true;
  releaser.join();
  EXPECT_EQ(HeldWhenSettled(*t.server), 0);
}

TEST(ServiceTest, StreamsBeyondTheLimitGetResourceExhausted) {
  auto options = testing::LoopbackOptions();
  options.limits.max_streams = 1;
  auto t = testing::StartServer(options, std::make_unique<GatedExecutor>());
  ASSERT_TRUE(t.server);
  grpc::ClientContext first_ctx;
  auto first = t.stub->ScaleShiftStream(&first_ctx);
  myops::v1::ScaleShiftStreamResponse response;
  // The first stream holds the slot once it is answered (a request without input is
  // refused on the stream, which goes on): streams opened after it are refused.
  ASSERT_TRUE(first->Write(myops::v1::ScaleShiftRequest()));
  ASSERT_TRUE(first->Read(&response));
  EXPECT_EQ(response.error().code(), static_cast<int>(grpc::StatusCode::INVALID_ARGUMENT));
  grpc::Status refused;
  {
    grpc::ClientContext ctx;
    auto second = t.stub->ScaleShiftStream(&ctx);
    second->WritesDone();
    while (second->Read(&response)) {
    }
    refused = second->Finish();
  }
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(refused.error_message().find("limit of open streams"), std::string::npos);
  first->WritesDone();
  EXPECT_TRUE(first->Finish().ok());
  // The slot is free again once the server is done with the first stream (a moment
  // after the client saw it finish).
  grpc::Status again;
  for (int i = 0; i < 200; ++i) {
    grpc::ClientContext ctx;
    auto stream = t.stub->ScaleShiftStream(&ctx);
    stream->WritesDone();
    again = stream->Finish();
    if (again.ok()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(again.ok()) << again.error_message();
}

}  // namespace
}  // namespace myops::server
