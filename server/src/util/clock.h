// The pipeline's time: durations in nanoseconds for Timing, and gRPC's wall-clock
// deadlines on the executor's monotonic clock. Neither torch nor protobuf.
#pragma once

#include <chrono>
#include <cstdint>

namespace myops::server {

using Clock = std::chrono::steady_clock;

inline int64_t Nanos(Clock::duration d) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
}

// A deadline more than a year away (gRPC's "none") is none.
inline Clock::time_point ToSteady(std::chrono::system_clock::time_point deadline) {
  const auto now = std::chrono::system_clock::now();
  if (deadline - now > std::chrono::hours(24 * 365)) return Clock::time_point::max();
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(deadline - now);
}

}  // namespace myops::server
