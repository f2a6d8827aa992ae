// A log-linear (HDR-style) latency histogram: exact below 128 ns, then 128 sub-buckets per
// power of two (relative error < 0.8%) up to 2^62 ns. Recording is O(1) and allocation-free.
// Not thread-safe: give each thread its own and Merge them.
#pragma once

#include <cstdint>
#include <vector>

namespace myops::loadtest {

class Histogram {
 public:
  Histogram();

  void Record(int64_t value);  // negative values count as 0
  void Merge(const Histogram& other);
  void Clear();

  int64_t count() const { return count_; }
  int64_t max() const { return max_; }
  int64_t min() const { return count_ ? min_ : 0; }
  double mean() const {
    return count_ ? static_cast<double>(sum_) / static_cast<double>(count_) : 0;
  }
  // The value below which a fraction q (0..1) of the recorded values lie (bucket midpoint;
  // the exact maximum for q = 1). 0 when empty.
  int64_t Percentile(double q) const;

 private:
  static int Index(uint64_t v);
  static int64_t LowerBound(int index);

  std::vector<int64_t> counts_;
  int64_t count_ = 0, max_ = 0, min_ = INT64_MAX;
  __int128 sum_ = 0;
};

}  // namespace myops::loadtest
