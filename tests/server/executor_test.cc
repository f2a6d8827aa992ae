// The executor through its torch-free interface: results, deadlines, cancellation,
// error mapping and shutdown. (Exceptions from kernels become statuses here.)
#include "executor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <condition_variable>
#include <cstring>
#include <future>
#include <mutex>

#include "reference.h"

namespace myops::server {
namespace {

struct Buffers {
  std::string in, out;
  Job job;
};

Buffers MakeJob(DType dtype, std::vector<int64_t> shape, double alpha, double beta) {
  Buffers b;
  int64_t numel = 1;
  for (int64_t d : shape) numel *= d;
  b.in = testing::RandomTensorBytes(dtype, numel, 7);
  b.out.assign(b.in.size(), '\xff');
  b.job.input = {dtype, shape, b.in.data(), static_cast<int64_t>(b.in.size())};
  b.job.output = {dtype, shape, b.out.data(), static_cast<int64_t>(b.out.size())};
  b.job.alpha = alpha;
  b.job.beta = beta;
  return b;
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
      Buffers b = MakeJob(t, {3, 129}, 1.5, -2.0);
      auto [status, timing] = RunSync(*e, b.job);
      ASSERT_TRUE(status.ok()) << status;
      EXPECT_EQ(b.out, testing::ReferenceScaleShift(t, {3, 129}, b.in, 1.5, -2.0));
      EXPECT_EQ(timing.device, "cpu");
    }
  }
}

TEST(ExecutorTest, ExpiredDeadlineIsNotComputed) {
  auto e = CpuExecutor();
  Buffers b = MakeJob(DType::kFloat32, {16}, 2.0, 1.0);
  b.job.deadline = std::chrono::steady_clock::now() - std::chrono::milliseconds(1);
  auto [status, timing] = RunSync(*e, b.job);
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_NE(std::string(status.message()).find("deadline passed before the request ran"),
            std::string::npos);
  EXPECT_EQ(b.out, std::string(b.in.size(), '\xff'));  // untouched
}

TEST(ExecutorTest, CancelledRequestIsNotComputed) {
  auto e = CpuExecutor();
  Buffers b = MakeJob(DType::kFloat32, {16}, 2.0, 1.0);
  b.job.is_cancelled = [] { return true; };
  auto [status, timing] = RunSync(*e, b.job);
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(b.out, std::string(b.in.size(), '\xff'));
}

TEST(ExecutorTest, SubmitAfterShutdownIsUnavailable) {
  auto e = CpuExecutor();
  e->Shutdown();
  Buffers b = MakeJob(DType::kFloat32, {1 << 16}, 2.0, 1.0);
  EXPECT_EQ(RunSync(*e, b.job).first.code(), absl::StatusCode::kUnavailable);
}

TEST(ExecutorTest, ShutdownRunsWhatIsQueued) {
  auto e = CpuExecutor();
  std::vector<Buffers> jobs;
  for (int i = 0; i < 32; ++i) jobs.push_back(MakeJob(DType::kFloat32, {4096}, 2.0, 1.0));
  std::mutex mu;
  int ok = 0;
  for (auto& b : jobs) {
    e->Submit(b.job, [&](absl::Status s, const JobTiming&) {
      std::lock_guard<std::mutex> lock(mu);
      ok += s.ok();
    });
  }
  e->Shutdown();
  EXPECT_EQ(ok, 32);
}

TEST(ExecutorTest, ReportsDevicesAndOperators) {
  auto e = CpuExecutor();
  EXPECT_EQ(e->devices().Names(), "cpu");
  EXPECT_EQ(e->info().operator_schemas.size(), 3u);
  EXPECT_EQ(e->info().workers, 2);
  EXPECT_FALSE(e->info().torch_version.empty());
}

TEST(ExecutorTest, UnavailableDevicesAreRejectedAtCreation) {
  ExecutorOptions o;
  o.devices = "cuda:7";
  EXPECT_EQ(Executor::Create(o).status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace myops::server
