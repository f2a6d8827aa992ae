// Log-linear histogram (see histogram.h).
#include "histogram.h"

#include <algorithm>
#include <cmath>

namespace myops::loadtest {
namespace {

constexpr int kSubBits = 7;
constexpr int kSub = 1 << kSubBits;
constexpr int kMaxExponent = 62;
constexpr int kBuckets = kSub + (kMaxExponent - kSubBits + 1) * kSub;

}  // namespace

Histogram::Histogram() : counts_(kBuckets, 0) {}

int Histogram::Index(uint64_t v) {
  if (v < static_cast<uint64_t>(kSub)) return static_cast<int>(v);
  const int e = std::min(63 - __builtin_clzll(v), kMaxExponent);
  const int shift = e - kSubBits;
  const int sub = static_cast<int>((v >> shift) - kSub);  // in [0, kSub)
  return kSub + shift * kSub + std::min(sub, kSub - 1);
}

int64_t Histogram::LowerBound(int index) {
  if (index < kSub) return index;
  const int shift = (index - kSub) / kSub;
  const int sub = (index - kSub) % kSub;
  return static_cast<int64_t>(kSub + sub) << shift;
}

void Histogram::Record(int64_t value) {
  const uint64_t v = value < 0 ? 0 : static_cast<uint64_t>(value);
  ++counts_[Index(v)];
  ++count_;
  sum_ += v;
  max_ = std::max<int64_t>(max_, static_cast<int64_t>(v));
  min_ = std::min<int64_t>(min_, static_cast<int64_t>(v));
}

void Histogram::Merge(const Histogram& other) {
  for (size_t i = 0; i < counts_.size(); ++i) counts_[i] += other.counts_[i];
  count_ += other.count_;
  sum_ += other.sum_;
  max_ = std::max(max_, other.max_);
  min_ = std::min(min_, other.min_);
}

void Histogram::Clear() {
  std::fill(counts_.begin(), counts_.end(), 0);
  count_ = 0;
  sum_ = 0;
  max_ = 0;
  min_ = INT64_MAX;
}

int64_t Histogram::Percentile(double q) const {
  if (count_ == 0) return 0;
  if (q >= 1.0) return max_;
  const auto rank = static_cast<int64_t>(std::ceil(q * static_cast<double>(count_)));
  int64_t seen = 0;
  for (int i = 0; i < kBuckets; ++i) {
    seen += counts_[i];
    if (seen >= std::max<int64_t>(rank, 1)) {
      const int64_t lo = LowerBound(i), hi = LowerBound(i + 1);
      return std::min(max_, std::max(min(), lo + (hi - lo) / 2));
    }
  }
  return max_;
}

}  // namespace myops::loadtest
