// The executor through its torch-free interface: results, deadlines, cancellation,
// error mapping and shutdown. (Exceptions from kernels become statuses here.)
#include "runtime/executor.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <future>
#include <mutex>
#include <thread>

#include "reference.h"
#include "runtime/torch/runner.h"

namespace myops::server {
namespace {

// A bound call of myops::scale_shift of random `in`, its result computed into `out`
// (OpCall::result_buffer), which starts as 0xff bytes. Not movable: job points at call.
struct Buffers {
  Buffers() = default;
  Buffers(const Buffers&) = delete;
  std::string in, out;
  OpCall call;
  Job job;
};

std::unique_ptr<Buffers> MakeJob(const OpRegistry& registry, DType dtype,
                                 std::vector<int64_t> shape, double alpha, double beta) {
  auto b = std::make_unique<Buffers>();
  int64_t numel = 1;
  for (int64_t d : shape) numel *= d;
  b->in = testing::RandomTensorBytes(dtype, numel, 7);
  b->out.assign(b->in.size(), '\xff');
  std::vector<NamedValue> args(3);
  args[0].value = Value::Tensor({dtype, shape, b->in.data(), static_cast<int64_t>(b->in.size())});
  args[1].value = Value::Float(alpha);
  args[2].value = Value::Float(beta);
  auto op = registry.Find("myops::scale_shift");
  EXPECT_TRUE(op.ok()) << op.status();
  b->call.op = *op;
  EXPECT_TRUE(
      BindArguments(registry.ops()[static_cast<size_t>(*op)], std::move(args), &b->call).ok());
  b->call.result_buffer.data = b->out.data();
  b->call.result_buffer.bytes = static_cast<int64_t>(b->out.size());
  b->call.result_buffer.layout = OpCall::OutputBuffer::Layout{dtype, shape};
  b->job.call = &b->call;
  return b;
}

// The registry of the myops operators (for executors started without one).
std::shared_ptr<const OpRegistry> MyopsRegistry() {
  return *OpRegistry::Build(*OpPatterns::Parse("myops::*"));
}

std::pair<absl::Status, JobTiming> RunSync(Executor& e, const Job& job) {
  std::promise<std::pair<absl::Status, JobTiming>> done;
  auto f = done.get_future();
  e.Submit(job, [&done](absl::Status s, const JobTiming& t) { done.set_value({s, t}); });
  return f.get();
}

std::unique_ptr<Executor> CpuExecutor(int64_t inline_max_bytes = 0) {
  ExecutorOptions o;
  o.devices = "cpu";
  o.cpu_workers = 2;
  o.inline_max_bytes = inline_max_bytes;
  auto e = Executor::Create(o);
  EXPECT_TRUE(e.ok()) << e.status();
  return std::move(*e);
}

TEST(ExecutorTest, ComputesEveryDtypeBitExactOnWorkersAndInline) {
  for (int64_t inline_bytes : {int64_t{0}, int64_t{1} << 30}) {
    auto e = CpuExecutor(inline_bytes);
    for (DType t : {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16}) {
      auto b = MakeJob(*e->info().registry, t, {3, 129}, 1.5, -2.0);
      auto [status, timing] = RunSync(*e, b->job);
      ASSERT_TRUE(status.ok()) << status;
      EXPECT_EQ(b->out, testing::ReferenceScaleShift(t, {3, 129}, b->in, 1.5, -2.0));
      EXPECT_EQ(timing.device, "cpu");
    }
  }
}

TEST(ExecutorTest, ExpiredDeadlineIsNotComputed) {
  auto e = CpuExecutor();
  auto b = MakeJob(*e->info().registry, DType::kFloat32, {16}, 2.0, 1.0);
  b->job.deadline = std::chrono::steady_clock::now() - std::chrono::milliseconds(1);
  auto [status, timing] = RunSync(*e, b->job);
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_NE(std::string(status.message()).find("deadline passed before the request ran"),
            std::string::npos);
  EXPECT_EQ(b->out, std::string(b->in.size(), '\xff'));  // untouched
}

TEST(ExecutorTest, CancelledRequestIsNotComputed) {
  auto e = CpuExecutor();
  auto b = MakeJob(*e->info().registry, DType::kFloat32, {16}, 2.0, 1.0);
  b->job.is_cancelled = [] { return true; };
  auto [status, timing] = RunSync(*e, b->job);
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(b->out, std::string(b->in.size(), '\xff'));
}

// With the default inline size, so that small jobs take the inline path and large ones
// the queue: both are refused once the executor is shut down, and neither is computed.
TEST(ExecutorTest, SubmitAfterShutdownIsUnavailable) {
  auto e = CpuExecutor(ExecutorOptions().inline_max_bytes);
  e->Shutdown();
  for (int64_t numel : {int64_t{16}, ExecutorOptions().inline_max_bytes / 4 + 1}) {
    SCOPED_TRACE(numel * 4 <= ExecutorOptions().inline_max_bytes ? "inline" : "queued");
    auto b = MakeJob(*e->info().registry, DType::kFloat32, {numel}, 2.0, 1.0);
    auto [status, timing] = RunSync(*e, b->job);
    EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
    EXPECT_EQ(status.message(), "the server is shutting down");
    EXPECT_EQ(b->out, std::string(b->in.size(), '\xff'));  // untouched
  }
}

// A job whose deadline passed and whose call was cancelled (gRPC cancels a call at its
// deadline) reports the deadline: it is the cause.
TEST(ExecutorTest, ExpiredDeadlineWinsOverCancellation) {
  auto e = CpuExecutor();
  auto b = MakeJob(*e->info().registry, DType::kFloat32, {16}, 2.0, 1.0);
  b->job.deadline = std::chrono::steady_clock::now() - std::chrono::milliseconds(1);
  b->job.is_cancelled = [] { return true; };
  EXPECT_EQ(RunSync(*e, b->job).first.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(b->out, std::string(b->in.size(), '\xff'));
}

TEST(ExecutorTest, ShutdownRunsWhatIsQueued) {
  auto e = CpuExecutor();
  std::vector<std::unique_ptr<Buffers>> jobs;
  for (int i = 0; i < 32; ++i) {
    jobs.push_back(MakeJob(*e->info().registry, DType::kFloat32, {4096}, 2.0, 1.0));
  }
  std::mutex mu;
  int ok = 0;
  for (auto& b : jobs) {
    e->Submit(b->job, [&](absl::Status s, const JobTiming&) {
      std::lock_guard<std::mutex> lock(mu);
      ok += s.ok();
    });
  }
  e->Shutdown();
  EXPECT_EQ(ok, 32);
}

// What one Prepare saw: where `prepare` ran, and where its job's `done` ran and whether
// before the job's Submit returned (on the same thread: no second hand-off).
struct Prepared {
  std::thread::id prepared_on, done_on;
  bool done_within_submit = false;
  absl::Status status;
  int64_t waited_ns = -1;
};

// Prepares a request of `input_bytes` whose preparation submits `b`'s job; returns
// once its `done` has run.
Prepared PrepareAndRun(Executor& e, int64_t input_bytes, Buffers* b) {
  Prepared p;
  std::promise<void> finished;
  std::atomic<bool> submitted{false};  // outlives `prepare`: `done` may run after it
  e.Prepare(input_bytes, &p.waited_ns, [&] {
    p.prepared_on = std::this_thread::get_id();
    e.Submit(b->job, [&](absl::Status s, const JobTiming&) {
      p.done_on = std::this_thread::get_id();
      p.done_within_submit = !submitted.load();
      p.status = std::move(s);
      finished.set_value();
    });
    submitted.store(true);
  });
  finished.get_future().wait();
  return p;
}

TEST(ExecutorTest, LargeRequestsArePreparedOnAWorkerThatAlsoRunsTheirJob) {
  auto e = CpuExecutor(/*inline_max_bytes=*/4096);
  // 4 KiB of input: inline on the caller, its job too (it is within the inline size).
  auto small = MakeJob(*e->info().registry, DType::kFloat32, {1024}, 2.0, 1.0);
  Prepared p = PrepareAndRun(*e, 4096, small.get());
  EXPECT_EQ(p.prepared_on, std::this_thread::get_id());
  EXPECT_EQ(p.done_on, std::this_thread::get_id());
  EXPECT_EQ(p.waited_ns, 0);
  ASSERT_TRUE(p.status.ok()) << p.status;
  EXPECT_EQ(small->out, testing::ReferenceScaleShift(DType::kFloat32, {1024}, small->in, 2.0, 1.0));
  // One byte more: on a worker; its job (queued when submitted from this thread) runs
  // right there, within its Submit.
  auto large = MakeJob(*e->info().registry, DType::kFloat32, {1025}, 2.0, 1.0);
  p = PrepareAndRun(*e, 4097, large.get());
  EXPECT_NE(p.prepared_on, std::this_thread::get_id());
  EXPECT_EQ(p.done_on, p.prepared_on);
  EXPECT_TRUE(p.done_within_submit);
  EXPECT_GE(p.waited_ns, 0);
  ASSERT_TRUE(p.status.ok()) << p.status;
  EXPECT_EQ(large->out, testing::ReferenceScaleShift(DType::kFloat32, {1025}, large->in, 2.0, 1.0));
}

// After Shutdown a preparation still runs (on the caller: the front end must answer its
// request), and the job it submits is refused.
TEST(ExecutorTest, PrepareAfterShutdownRunsOnTheCallerAndItsJobIsRefused) {
  auto e = CpuExecutor(/*inline_max_bytes=*/4096);
  e->Shutdown();
  auto b = MakeJob(*e->info().registry, DType::kFloat32, {4096}, 2.0, 1.0);
  Prepared p = PrepareAndRun(*e, 1 << 20, b.get());
  EXPECT_EQ(p.prepared_on, std::this_thread::get_id());
  EXPECT_EQ(p.waited_ns, 0);
  EXPECT_EQ(p.status.code(), absl::StatusCode::kUnavailable) << p.status;
  EXPECT_EQ(b->out, std::string(b->in.size(), '\xff'));  // untouched
}

TEST(ExecutorTest, ReportsDevicesAndOperators) {
  auto e = CpuExecutor();
  EXPECT_EQ(e->devices().Names(), "cpu");
  // myops::*: scale_shift, its .out and in-place variants (listed, not served).
  ASSERT_EQ(e->info().registry->ops().size(), 3u);
  EXPECT_EQ(e->info().registry->ops()[0].QualifiedName(), "myops::scale_shift");
  EXPECT_TRUE(e->info().registry->ops()[0].served);
  EXPECT_EQ(e->info().workers, 2);
  EXPECT_FALSE(e->info().torch_version.empty());
}

// Stands in for the CUDA runner on machines without a GPU: computes on the CPU.
class FakeGpuRunner final : public DeviceRunner {
 public:
  void RunCall(const OpHandle& op, OpCall& call, int64_t* compute_ns) override {
    cpu_->RunCall(op, call, compute_ns);
  }

 private:
  std::unique_ptr<DeviceRunner> cpu_ = MakeCpuRunner();
};

ExecutorOptions FakeGpuOptions() {
  ExecutorOptions o;
  o.cpu_workers = 1;
  o.cuda_workers = 3;
  o.inline_max_bytes = 0;
  return o;
}

const std::vector<Device> kFakeGpuAndCpu = {{DeviceKind::kCuda, 0}, {DeviceKind::kCpu, 0}};

TEST(ExecutorStartTest, CudaRunnersAreMadeAtStartAndServeTheirSlot) {
  std::vector<int> made;  // written on this thread only, during StartExecutor
  RuntimeInfo info;
  info.registry = MyopsRegistry();
  auto e = StartExecutor(FakeGpuOptions(), kFakeGpuAndCpu, info, [&made](int index) {
    made.push_back(index);
    return std::make_unique<FakeGpuRunner>();
  });
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(made, (std::vector<int>{0, 0, 0}));  // one per CUDA worker, before any job
  EXPECT_EQ((*e)->info().workers, 4);
  auto b = MakeJob(*(*e)->info().registry, DType::kFloat32, {1000}, 2.0, -1.0);
  b->job.device_slot = 0;
  auto [status, timing] = RunSync(**e, b->job);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(timing.device, "cuda:0");
  EXPECT_EQ(b->out, testing::ReferenceScaleShift(DType::kFloat32, {1000}, b->in, 2.0, -1.0));
}

// CUDA context or stream-pool set-up that throws: a status from start-up, not an exception
// on a worker thread (std::terminate), and no worker left running.
TEST(ExecutorStartTest, RunnerSetUpFailureIsAStatus) {
  int calls = 0;
  auto e = StartExecutor(FakeGpuOptions(), kFakeGpuAndCpu, RuntimeInfo{},
                         [&calls](int) -> std::unique_ptr<DeviceRunner> {
                           if (++calls == 2) throw std::runtime_error("CUDA error: out of streams");
                           return std::make_unique<FakeGpuRunner>();
                         });
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(e.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(e.status().message(),
            "could not set up cuda:0 for serving: CUDA error: out of streams");
}

TEST(ExecutorTest, UnavailableDevicesAreRejectedAtCreation) {
  ExecutorOptions o;
  o.devices = "cuda:7";
  EXPECT_EQ(Executor::Create(o).status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace myops::server

namespace myops::server {
namespace {

// Programs' calls go to the workers even when small enough to run inline (their packages
// hold one model instance per worker: a submitting thread would block on one). The jobs
// here have expired deadlines, so nothing runs (the registry is a description only), but
// the refusal comes from the thread that took the job.
TEST(ExecutorTest, ProgramsNeverRunInline) {
  OpInfo op, program;
  op.name = "ns::op";
  program.name = "net";
  program.program = true;
  RuntimeInfo info;
  info.registry = std::make_shared<const OpRegistry>(std::vector<OpInfo>{op, program});
  ExecutorOptions o;
  o.cpu_workers = 1;
  o.inline_max_bytes = int64_t{1} << 30;
  auto e = StartExecutor(o, {Device{}}, info, nullptr);
  ASSERT_TRUE(e.ok()) << e.status();
  const std::vector<OpInfo>& ops = (*e)->info().registry->ops();
  for (size_t i = 0; i < ops.size(); ++i) {
    OpCall call;
    call.op = static_cast<int>(i);
    Job job;
    job.call = &call;
    job.deadline = std::chrono::steady_clock::now() - std::chrono::milliseconds(1);
    std::promise<std::thread::id> ran_on;
    (*e)->Submit(job, [&ran_on](absl::Status s, const JobTiming&) {
      EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
      ran_on.set_value(std::this_thread::get_id());
    });
    const bool inline_run = ran_on.get_future().get() == std::this_thread::get_id();
    EXPECT_EQ(inline_run, !ops[i].program) << ops[i].name;
  }
}

}  // namespace
}  // namespace myops::server
