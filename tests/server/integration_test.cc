// The real server in-process on a free loopback port, with the real executor: every
// dtype and shape bit-exact against the CPU operator, streaming, errors, deadlines,
// server info, reflection, and many concurrent clients.
#include <grpcpp/generic/generic_stub.h>
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <future>
#include <mutex>
#include <random>
#include <thread>
#include <utility>

#include "reference.h"
#include "test_server.h"

namespace myops::server {
namespace {

using myops::v1::ScaleShiftRequest;
using myops::v1::ScaleShiftResponse;
using testing::MakeRequest;

std::vector<int64_t> Shape(const myops::v1::Tensor& t) {
  return {t.shape().begin(), t.shape().end()};
}

std::string Expected(const ScaleShiftRequest& r) {
  return testing::ReferenceScaleShift(static_cast<DType>(r.input().dtype()), Shape(r.input()),
                                      r.input().data(), r.alpha(), r.beta());
}

class IntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    t_ = testing::StartServer(testing::LoopbackOptions());
    ASSERT_TRUE(t_.server);
  }
  grpc::Status Call(const ScaleShiftRequest& request, ScaleShiftResponse* response,
                    std::chrono::milliseconds deadline = std::chrono::seconds(60)) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + deadline);
    return t_.stub->ScaleShift(&ctx, request, response);
  }
  testing::TestServer t_;
};

TEST_F(IntegrationTest, EveryDtypeAndShapeIsBitExact) {
  const std::vector<std::vector<int64_t>> shapes = {{},  {0},      {2, 0, 3},   {1},
                                                    {7}, {16, 33}, {3, 4, 5, 6}};
  uint64_t seed = 0;
  for (DType dtype : {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16}) {
    for (const auto& shape : shapes) {
      SCOPED_TRACE(std::string(DTypeName(dtype)) + " rank " + std::to_string(shape.size()));
      ScaleShiftRequest request = MakeRequest(dtype, shape, 1.75, -0.5, ++seed);
      ScaleShiftResponse response;
      grpc::Status status = Call(request, &response);
      ASSERT_TRUE(status.ok()) << status.error_message();
      EXPECT_EQ(response.output().dtype(), request.input().dtype());
      EXPECT_EQ(Shape(response.output()), shape);
      EXPECT_EQ(response.output().data(), Expected(request));
      EXPECT_EQ(response.request_id(), seed);
      EXPECT_EQ(response.timing().device(), "cpu");
      EXPECT_GT(response.timing().total_ns(), 0);
    }
  }
}

TEST_F(IntegrationTest, SixtyFourMebibyteTensor) {
  ScaleShiftRequest request = MakeRequest(DType::kFloat32, {16, 1 << 20}, 3.0, 0.25, 9);
  ScaleShiftResponse response;
  ASSERT_TRUE(Call(request, &response).ok());
  EXPECT_EQ(response.output().data().size(), size_t{64} << 20);
  EXPECT_TRUE(response.output().data() == Expected(request));
  EXPECT_GE(response.timing().total_ns(),
            response.timing().compute_ns() + response.timing().decode_ns());
}

TEST_F(IntegrationTest, BadRequestsGetPreciseStatuses) {
  struct Case {
    const char* name;
    ScaleShiftRequest request;
    grpc::StatusCode code;
    const char* fragment;
  };
  std::vector<Case> cases;
  cases.push_back({"no input", ScaleShiftRequest(), grpc::StatusCode::INVALID_ARGUMENT,
                   "the request has no 'input' tensor"});
  ScaleShiftRequest r = MakeRequest(DType::kFloat32, {2, 3}, 1, 0);
  r.mutable_input()->mutable_data()->resize(7);
  cases.push_back({"short data", r, grpc::StatusCode::INVALID_ARGUMENT,
                   "input.data has 7 bytes but shape [2, 3] of float32 needs exactly 24"});
  r = MakeRequest(DType::kFloat32, {2}, 1, 0);
  r.mutable_input()->set_dtype(static_cast<myops::v1::DType>(42));
  cases.push_back({"unknown dtype", r, grpc::StatusCode::INVALID_ARGUMENT, "unknown value 42"});
  r = MakeRequest(DType::kFloat32, {2}, 1, 0);
  r.set_device("cuda:0");
  cases.push_back({"absent GPU", r, grpc::StatusCode::FAILED_PRECONDITION,
                   "device \"cuda:0\" is not available on this server; it serves: cpu"});
  r.set_device("gpu");
  cases.push_back({"bad device", r, grpc::StatusCode::INVALID_ARGUMENT, "device \"gpu\""});
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ScaleShiftResponse response;
    grpc::Status status = Call(c.request, &response);
    EXPECT_EQ(status.error_code(), c.code);
    EXPECT_NE(status.error_message().find(c.fragment), std::string::npos) << status.error_message();
  }
}

// The codec accepts the integer and bool dtypes; scale_shift's own checks refuse them,
// and the client reads PyTorch's message naming the dtype.
TEST_F(IntegrationTest, IntegerAndBoolInputsGetTheOperatorsInvalidArgument) {
  const std::pair<DType, const char*> cases[] = {{DType::kInt8, "Char"},  {DType::kInt16, "Short"},
                                                 {DType::kInt32, "Int"},  {DType::kInt64, "Long"},
                                                 {DType::kUInt8, "Byte"}, {DType::kBool, "Bool"}};
  for (const auto& [dtype, torch_name] : cases) {
    SCOPED_TRACE(std::string(DTypeName(dtype)));
    ScaleShiftResponse response;
    grpc::Status status = Call(MakeRequest(dtype, {2, 3}, 2.0, 1.0), &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(
        status.error_message().find(std::string("unsupported dtype ") + torch_name + " for 'x'"),
        std::string::npos)
        << status.error_message();
  }
}

TEST_F(IntegrationTest, MessagesOverTheLimitAreRejectedByTransport) {
  auto options = testing::LoopbackOptions();
  options.limits.max_message_bytes = 1 << 20;
  options.limits.tensor.max_bytes = 1 << 20;
  auto small = testing::StartServer(options);
  ASSERT_TRUE(small.server);
  grpc::ClientContext ctx;
  ScaleShiftResponse response;
  auto status =
      small.stub->ScaleShift(&ctx, MakeRequest(DType::kFloat32, {1 << 19}, 1, 0), &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
}

// Wraps the real executor: records each job's final status, and can hold the first job
// on its worker (inside the executor's pre-run cancellation check) until Open().
class RecordingExecutor final : public Executor {
 public:
  explicit RecordingExecutor(std::unique_ptr<Executor> real) : real_(std::move(real)) {}
  const DeviceSet& devices() const override { return real_->devices(); }
  const RuntimeInfo& info() const override { return real_->info(); }
  void Submit(Job job, JobDone done) override {
    int index;
    {
      std::lock_guard<std::mutex> lock(mu_);
      index = submitted_++;
      deadlines_.push_back(job.deadline);
      cv_.notify_all();
    }
    if (index == 0) {
      job.is_cancelled = [this, inner = std::move(job.is_cancelled)] {
        std::unique_lock<std::mutex> lock(mu_);
        first_running_ = true;
        cv_.notify_all();
        cv_.wait(lock, [this] { return open_; });
        return inner && inner();
      };
    }
    real_->Submit(std::move(job),
                  [this, done = std::move(done)](absl::Status s, const JobTiming& t) {
                    {
                      std::lock_guard<std::mutex> lock(mu_);
                      finished_.push_back({s, t});
                      cv_.notify_all();
                    }
                    done(std::move(s), t);
                  });
  }
  void Shutdown() override {
    Open();
    real_->Shutdown();
  }

  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  // Waits (a minute at most) until `pred` holds; returns whether it does.
  bool WaitUntil(const std::function<bool()>& pred) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(60), pred);
  }
  // Read with mu_ held: inside a WaitUntil predicate.
  int submitted() const { return submitted_; }
  bool first_running() const { return first_running_; }
  size_t finished_count() const { return finished_.size(); }
  std::chrono::steady_clock::time_point deadline(int index) {
    std::lock_guard<std::mutex> lock(mu_);
    return deadlines_.at(static_cast<size_t>(index));
  }
  std::vector<std::pair<absl::Status, JobTiming>> finished() {
    std::lock_guard<std::mutex> lock(mu_);
    return finished_;
  }

 private:
  std::unique_ptr<Executor> real_;
  std::mutex mu_;
  std::condition_variable cv_;
  int submitted_ = 0;
  bool first_running_ = false, open_ = false;
  std::vector<std::pair<absl::Status, JobTiming>> finished_;
  std::vector<std::chrono::steady_clock::time_point> deadlines_;  // as submitted
};

// A request whose deadline passes while it waits in the server's queue is not computed:
// one CPU worker, inline runs off, the worker held on a large job; a small request with a
// deadline arrives, is queued, and its deadline passes (the client sees
// DEADLINE_EXCEEDED, then the server's own deadline passes); once the worker is free,
// the executor refuses to run it.
TEST(DeadlineTest, ExpiredDeadlineIsNotComputed) {
  auto options = testing::LoopbackOptions();
  options.executor.cpu_workers = 1;
  options.executor.inline_max_bytes = 0;
  auto real = Executor::Create(options.executor);
  ASSERT_TRUE(real.ok()) << real.status();
  auto recording = std::make_unique<RecordingExecutor>(std::move(*real));
  RecordingExecutor* rec = recording.get();
  auto t = testing::StartServer(options, std::move(recording));
  ASSERT_TRUE(t.server);

  grpc::ClientContext big_ctx;
  big_ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
  ScaleShiftRequest big = MakeRequest(DType::kFloat32, {4 << 20}, 2.0, 1.0, 1);
  ScaleShiftResponse big_response;
  std::promise<grpc::Status> big_done;
  t.stub->async()->ScaleShift(&big_ctx, &big, &big_response,
                              [&](grpc::Status s) { big_done.set_value(s); });
  ASSERT_TRUE(rec->WaitUntil([rec] { return rec->first_running(); }));

  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
  ScaleShiftResponse response;
  std::promise<grpc::Status> small_done;
  ScaleShiftRequest small = MakeRequest(DType::kFloat32, {256}, 2.0, 1.0, 2);
  t.stub->async()->ScaleShift(&ctx, &small, &response,
                              [&](grpc::Status s) { small_done.set_value(s); });
  ASSERT_TRUE(rec->WaitUntil([rec] { return rec->submitted() == 2; }))
      << "the small request never reached the executor";
  EXPECT_EQ(small_done.get_future().get().error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  // The server's deadline can be a little later than the client's (transit, and the
  // grpc-timeout header rounds up); the client's own cancellation reaches the server
  // first. Let the server's deadline pass too, so that it is the deadline that stops it.
  std::this_thread::sleep_until(rec->deadline(1));
  rec->Open();  // The worker finishes the large job, then takes the expired one.
  ASSERT_TRUE(big_done.get_future().get().ok());
  EXPECT_TRUE(big_response.output().data() == Expected(big));
  ASSERT_TRUE(rec->WaitUntil([&] { return rec->finished_count() == 2; }));
  auto finished = rec->finished();
  EXPECT_TRUE(finished[0].first.ok()) << finished[0].first;
  EXPECT_EQ(finished[1].first.code(), absl::StatusCode::kDeadlineExceeded) << finished[1].first;
  EXPECT_NE(std::string(finished[1].first.message()).find("deadline passed before the request ran"),
            std::string::npos);
  EXPECT_EQ(finished[1].second.compute_ns, 0);  // Not computed.
}

TEST_F(IntegrationTest, StreamingPipelinesAndKeepsGoingAfterBadRequests) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  auto stream = t_.stub->ScaleShiftStream(&ctx);
  std::map<uint64_t, ScaleShiftRequest> sent;
  std::thread writer([&] {
    for (uint64_t id = 1; id <= 100; ++id) {
      DType dtype = static_cast<DType>(1 + id % 4);
      ScaleShiftRequest r = MakeRequest(dtype, {static_cast<int64_t>(id * 37 % 5000)}, 0.5, 2, id);
      if (id % 10 == 0) r.mutable_input()->mutable_data()->append("x");  // malformed
      sent[id] = r;  // (read by the main thread only after join)
      ASSERT_TRUE(stream->Write(r));
    }
    stream->WritesDone();
  });
  std::map<uint64_t, myops::v1::ScaleShiftStreamResponse> received;
  myops::v1::ScaleShiftStreamResponse response;
  while (stream->Read(&response)) {
    EXPECT_TRUE(received.emplace(response.request_id(), response).second) << "duplicate id";
  }
  writer.join();
  ASSERT_TRUE(stream->Finish().ok());
  ASSERT_EQ(received.size(), 100u);
  for (const auto& [id, resp] : received) {
    if (id % 10 == 0) {
      EXPECT_EQ(resp.error().code(), static_cast<int>(grpc::StatusCode::INVALID_ARGUMENT));
      EXPECT_NE(resp.error().message().find("input.data has"), std::string::npos);
    } else {
      ASSERT_TRUE(resp.has_response()) << resp.error().message();
      EXPECT_EQ(resp.response().output().data(), Expected(sent[id])) << "id " << id;
    }
  }
}

TEST_F(IntegrationTest, ServerInfoListsVersionsDevicesOperatorsAndLimits) {
  grpc::ClientContext ctx;
  myops::v1::ServerInfoResponse info;
  ASSERT_TRUE(t_.stub->ServerInfo(&ctx, {}, &info).ok());
  EXPECT_FALSE(info.myops_version().empty());
  EXPECT_FALSE(info.torch_version().empty());
  ASSERT_EQ(info.devices_size(), 1);
  EXPECT_EQ(info.devices(0).name(), "cpu");
  ASSERT_EQ(info.operators_size(), 1);  // served ones: not the .out and in-place variants
  EXPECT_EQ(info.operators(0).name(), "myops::scale_shift");
  EXPECT_EQ(info.limits().max_message_bytes(), int64_t{1} << 30);
  EXPECT_EQ(info.limits().max_inflight(), 64);
  EXPECT_EQ(info.workers(), 2);
}

TEST_F(IntegrationTest, HealthAndReflectionAreServed) {
  EXPECT_EQ(testing::HealthStatus(t_.channel, ""), 1);
  EXPECT_EQ(testing::HealthStatus(t_.channel, "myops.v1.Myops"), 1);
  EXPECT_EQ(testing::HealthStatus(t_.channel, "no.such.Service"), -1);  // NOT_FOUND
  // ServerReflectionRequest { list_services = 7: "" } on the v1alpha bidi stream.
  grpc::GenericStub stub(t_.channel);
  grpc::ClientContext ctx;
  grpc::CompletionQueue cq;
  auto call =
      stub.PrepareCall(&ctx, "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", &cq);
  void* tag;
  bool ok;
  call->StartCall(reinterpret_cast<void*>(1));
  ASSERT_TRUE(cq.Next(&tag, &ok) && ok);
  grpc::Slice slice(std::string("\x3a\x00", 2));
  grpc::ByteBuffer request(&slice, 1), reply;
  call->Write(request, reinterpret_cast<void*>(2));
  ASSERT_TRUE(cq.Next(&tag, &ok) && ok);
  call->Read(&reply, reinterpret_cast<void*>(3));
  ASSERT_TRUE(cq.Next(&tag, &ok) && ok);
  std::vector<grpc::Slice> slices;
  reply.Dump(&slices);
  std::string bytes;
  for (auto& s : slices) bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  EXPECT_NE(bytes.find("myops.v1.Myops"), std::string::npos);
  EXPECT_NE(bytes.find("grpc.health.v1.Health"), std::string::npos);
  ctx.TryCancel();
  grpc::Status status;
  call->Finish(&status, reinterpret_cast<void*>(4));
  while (cq.Next(&tag, &ok) && tag != reinterpret_cast<void*>(4)) {
  }
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
}

TEST_F(IntegrationTest, SixteenConcurrentClientsTwoHundredRequestsEach) {
  std::atomic<int> errors{0}, mismatches{0}, done{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 16; ++c) {
    clients.emplace_back([&, c] {
      auto stub = myops::v1::Myops::NewStub(testing::Connect(t_.address));  // own channel
      std::mt19937 rng(c);
      for (int i = 0; i < 200; ++i) {
        DType dtype = static_cast<DType>(1 + rng() % 4);
        ScaleShiftRequest r =
            MakeRequest(dtype, {static_cast<int64_t>(rng() % 3000)}, (rng() % 100) / 8.0 - 6,
                        (rng() % 100) / 16.0, c * 1000 + i);
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
        ScaleShiftResponse response;
        if (!stub->ScaleShift(&ctx, r, &response).ok()) {
          ++errors;
        } else if (response.output().data() != Expected(r)) {
          ++mismatches;
        }
        ++done;
      }
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(done.load(), 3200);
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(mismatches.load(), 0);
}

// CUDA twins: the same requests on "cuda" (and on each "cuda:N") agree with the CPU
// operator. Skipped when the server finds no GPU.
TEST(CudaIntegrationTest, EveryDtypeOnEveryGpuMatchesTheCpuOperator) {
  auto options = testing::LoopbackOptions();
  options.executor.devices = "auto";
  auto t = testing::StartServer(options);
  ASSERT_TRUE(t.server);
  grpc::ClientContext info_ctx;
  myops::v1::ServerInfoResponse info;
  ASSERT_TRUE(t.stub->ServerInfo(&info_ctx, {}, &info).ok());
  std::vector<std::string> gpus;
  for (const auto& d : info.devices())
    if (d.name().rfind("cuda:", 0) == 0) gpus.push_back(d.name());
  if (gpus.empty()) GTEST_SKIP() << "no CUDA device";
  gpus.push_back("cuda");
  uint64_t seed = 0;
  for (const std::string& device : gpus) {
    for (DType dtype : {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16}) {
      for (auto shape : {std::vector<int64_t>{}, {0}, {5, 7}, {1 << 20}}) {
        SCOPED_TRACE(device + " " + std::string(DTypeName(dtype)));
        ScaleShiftRequest request = MakeRequest(dtype, shape, -1.25, 3.0, ++seed);
        request.set_device(device);
        ScaleShiftResponse response;
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
        grpc::Status status = t.stub->ScaleShift(&ctx, request, &response);
        ASSERT_TRUE(status.ok()) << status.error_message();
        EXPECT_EQ(response.timing().device().rfind("cuda:", 0), 0u);
        const double tol = dtype == DType::kBFloat16  ? 8e-3
                           : dtype == DType::kFloat16 ? 1e-3
                                                      : 1e-6;
        EXPECT_TRUE(
            testing::AllClose(dtype, response.output().data(), Expected(request), tol, tol));
      }
    }
  }
}

}  // namespace
}  // namespace myops::server
