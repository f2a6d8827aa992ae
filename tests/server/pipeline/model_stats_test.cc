// The per-model statistics store (server/src/model_stats.h): the mapping of a request's
// stages to Triton's durations, failures, the last-inference time, out-of-range models,
// and exact totals when many threads record at once.
#include "pipeline/model_stats.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace myops::server {
namespace {

RequestStages Stages(int64_t decode, int64_t queue, int64_t compute, int64_t encode,
                     int64_t total) {
  RequestStages s;
  s.decode_ns = decode;
  s.queue_ns = queue;
  s.compute_ns = compute;
  s.encode_ns = encode;
  s.total_ns = total;
  return s;
}

TEST(ModelStats, StartsAtZero) {
  ModelStats stats(3);
  EXPECT_EQ(stats.size(), 3);
  const ModelStatsSnapshot s = stats.Read(2);
  EXPECT_EQ(s.last_inference_ms, 0u);
  EXPECT_EQ(s.inference_count, 0u);
  EXPECT_EQ(s.success.count, 0u);
  EXPECT_EQ(s.fail.count, 0u);
  EXPECT_EQ(s.queue.ns, 0u);
}

TEST(ModelStats, SuccessesSumTheirStagesPerModel) {
  ModelStats stats(2);
  stats.RecordSuccess(1, Stages(10, 20, 30, 40, 120), 1000);
  stats.RecordSuccess(1, Stages(1, 2, 3, 4, 12), 2000);
  const ModelStatsSnapshot s = stats.Read(1);
  EXPECT_EQ(s.success.count, 2u);
  EXPECT_EQ(s.success.ns, 132u);
  EXPECT_EQ(s.compute_input.count, 2u);
  EXPECT_EQ(s.compute_input.ns, 11u);  // decode
  EXPECT_EQ(s.queue.count, 2u);
  EXPECT_EQ(s.queue.ns, 22u);
  EXPECT_EQ(s.compute_infer.ns, 33u);   // compute
  EXPECT_EQ(s.compute_output.ns, 44u);  // encode
  EXPECT_EQ(s.inference_count, 2u);
  EXPECT_EQ(s.execution_count, 2u);
  EXPECT_EQ(s.last_inference_ms, 2000u);
  EXPECT_EQ(s.fail.count, 0u);
  // The other model saw nothing.
  EXPECT_EQ(stats.Read(0).success.count, 0u);
  EXPECT_EQ(stats.Read(0).last_inference_ms, 0u);
}

TEST(ModelStats, FailuresCountApartFromSuccesses) {
  ModelStats stats(1);
  stats.RecordFailure(0, 500, 3000);
  stats.RecordFailure(0, -7, 2500);  // negative durations count as 0; older time ignored
  const ModelStatsSnapshot s = stats.Read(0);
  EXPECT_EQ(s.fail.count, 2u);
  EXPECT_EQ(s.fail.ns, 500u);
  EXPECT_EQ(s.success.count, 0u);
  EXPECT_EQ(s.queue.count, 0u);
  EXPECT_EQ(s.inference_count, 0u);
  EXPECT_EQ(s.last_inference_ms, 3000u);
}

TEST(ModelStats, IgnoresModelsOutOfRange) {
  ModelStats stats(1);
  stats.RecordSuccess(-1, Stages(1, 1, 1, 1, 4), 1);
  stats.RecordSuccess(1, Stages(1, 1, 1, 1, 4), 1);
  stats.RecordFailure(7, 1, 1);
  EXPECT_EQ(stats.Read(0).success.count, 0u);
  EXPECT_EQ(stats.Read(0).fail.count, 0u);
  EXPECT_EQ(stats.Read(-1).success.count, 0u);
  EXPECT_EQ(stats.Read(1).fail.count, 0u);
  ModelStats none(0);
  none.RecordFailure(0, 1, 1);
  EXPECT_EQ(none.size(), 0);
}

TEST(ModelStats, ConcurrentRecordsAllCount) {
  constexpr int kThreads = 8;
  constexpr int kEach = 20000;
  ModelStats stats(2);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&stats, t] {
      for (int i = 0; i < kEach; ++i) {
        const uint64_t now = static_cast<uint64_t>(t * kEach + i + 1);
        if (i % 4 == 0) {
          stats.RecordFailure(t % 2, 3, now);
        } else {
          stats.RecordSuccess(t % 2, Stages(1, 2, 3, 4, 10), now);
        }
        (void)stats.Read(t % 2);  // readers run alongside
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int model = 0; model < 2; ++model) {
    const ModelStatsSnapshot s = stats.Read(model);
    const uint64_t requests = uint64_t{kThreads / 2} * kEach;
    EXPECT_EQ(s.fail.count, requests / 4);
    EXPECT_EQ(s.fail.ns, 3 * (requests / 4));
    EXPECT_EQ(s.success.count, requests - requests / 4);
    EXPECT_EQ(s.success.ns, 10 * s.success.count);
    EXPECT_EQ(s.queue.ns, 2 * s.success.count);
  }
  // The latest time of all wins: thread kThreads-1 (model 1) recorded it last in its run.
  EXPECT_EQ(stats.Read(1).last_inference_ms, uint64_t{kThreads} * kEach);
  EXPECT_EQ(stats.Read(0).last_inference_ms, uint64_t{kThreads - 1} * kEach);
}

}  // namespace
}  // namespace myops::server
