// The load test's log-linear histogram against exact percentiles of the same samples.
#include "histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

namespace myops::loadtest {
namespace {

TEST(HistogramTest, PercentilesWithinOnePercentOfExact) {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> dist(11.0, 1.5);  // ~60 us median, long tail
  std::vector<int64_t> values;
  Histogram h;
  for (int i = 0; i < 200000; ++i) {
    const auto v = static_cast<int64_t>(dist(rng));
    values.push_back(v);
    h.Record(v);
  }
  std::sort(values.begin(), values.end());
  for (double q : {0.5, 0.9, 0.99, 0.999}) {
    const auto exact = static_cast<double>(values[static_cast<size_t>(q * values.size()) - 1]);
    EXPECT_NEAR(static_cast<double>(h.Percentile(q)), exact, exact * 0.01) << "q=" << q;
  }
  EXPECT_EQ(h.Percentile(1.0), values.back());
  EXPECT_EQ(h.min(), values.front());
  EXPECT_EQ(h.count(), 200000);
}

TEST(HistogramTest, SmallValuesAreExactAndMergeAddsUp) {
  Histogram a, b;
  for (int v = 0; v < 100; ++v) a.Record(v);
  for (int v = 100; v < 128; ++v) b.Record(v);
  a.Merge(b);
  EXPECT_EQ(a.count(), 128);
  EXPECT_EQ(a.Percentile(0.5), 63);
  EXPECT_EQ(a.max(), 127);
  EXPECT_DOUBLE_EQ(a.mean(), 63.5);
  a.Clear();
  EXPECT_EQ(a.count(), 0);
  EXPECT_EQ(a.Percentile(0.5), 0);
}

TEST(HistogramTest, HugeAndNegativeValuesAreClamped) {
  Histogram h;
  h.Record(-5);
  h.Record(int64_t{1} << 62);
  EXPECT_EQ(h.min(), 0);
  EXPECT_EQ(h.max(), int64_t{1} << 62);
  EXPECT_EQ(h.Percentile(0.5), 0);
}

}  // namespace
}  // namespace myops::loadtest
