// Request metrics of myops-server, rendered in the Prometheus text format (0.0.4):
// requests by RPC and status code, the server-side latency of successful requests as a
// histogram, the sums of the timing breakdown's stages, tensor bytes, and requests in
// flight. Served over HTTP by MetricsHttpServer (metrics_http.h) when enabled.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "myops/v1/myops.pb.h"

namespace myops::server {

// Thread-safe: Record is lock-free (relaxed atomics) and may run on any thread; Render
// reads each value atomically (no snapshot across values, as Prometheus clients do).
class Metrics {
 public:
  enum class Rpc { kScaleShift = 0, kScaleShiftStream = 1 };

  // One finished request. `timing` and `tensor_bytes` (the input tensor's size) count
  // only when `status` is OK.
  void Record(Rpc rpc, const absl::Status& status, const myops::v1::Timing& timing,
              uint64_t tensor_bytes);

  // The exposition text; `inflight` is the service's current in-flight count.
  std::string Render(int64_t inflight) const;

  // Upper bounds of the latency histogram's buckets, in seconds (then +Inf).
  static constexpr std::array<double, 16> kBucketSeconds = {
      0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
      0.05,   0.1,     0.25,   0.5,   1.0,    2.5,   5.0,  10.0};

 private:
  static constexpr int kCodes = 17;  // gRPC status codes 0..16
  static constexpr int kStages = 4;  // decode, queue, compute, encode

  struct PerRpc {
    std::array<std::atomic<uint64_t>, kCodes> requests{};
    std::array<std::atomic<uint64_t>, kBucketSeconds.size() + 1> buckets{};  // Not cumulative.
    std::atomic<uint64_t> duration_ns{0};
    std::array<std::atomic<uint64_t>, kStages> stage_ns{};
    std::atomic<uint64_t> tensor_bytes{0};
  };
  std::array<PerRpc, 2> rpcs_;
};

}  // namespace myops::server
