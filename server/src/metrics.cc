// Prometheus text rendering of the request metrics (see metrics.h).
#include "metrics.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace myops::server {
namespace {

constexpr const char* kRpcNames[] = {"ScaleShift", "ScaleShiftStream"};
constexpr const char* kStageNames[] = {"decode", "queue", "compute", "encode"};
constexpr const char* kCodeNames[] = {
    "OK",        "CANCELLED",      "UNKNOWN",           "INVALID_ARGUMENT",   "DEADLINE_EXCEEDED",
    "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
    "ABORTED",   "OUT_OF_RANGE",   "UNIMPLEMENTED",     "INTERNAL",           "UNAVAILABLE",
    "DATA_LOSS", "UNAUTHENTICATED"};

uint64_t NonNegative(int64_t ns) { return ns > 0 ? static_cast<uint64_t>(ns) : 0; }

std::string Seconds(uint64_t ns) { return absl::StrFormat("%.9f", static_cast<double>(ns) * 1e-9); }

void Header(std::string* out, const char* name, const char* type, const char* help) {
  absl::StrAppend(out, "# HELP ", name, " ", help, "\n# TYPE ", name, " ", type, "\n");
}

}  // namespace

void Metrics::Record(Rpc rpc, const absl::Status& status, const myops::v1::Timing& timing,
                     uint64_t tensor_bytes) {
  PerRpc& m = rpcs_[static_cast<int>(rpc)];
  const int code = static_cast<int>(status.code());
  m.requests[code >= 0 && code < kCodes ? code : 2].fetch_add(1, std::memory_order_relaxed);
  if (!status.ok()) return;
  const uint64_t total = NonNegative(timing.total_ns());
  const double seconds = static_cast<double>(total) * 1e-9;
  const size_t bucket = std::lower_bound(kBucketSeconds.begin(), kBucketSeconds.end(), seconds) -
                        kBucketSeconds.begin();  // The first bound >= seconds ("le"), or +Inf.
  m.buckets[bucket].fetch_add(1, std::memory_order_relaxed);
  m.duration_ns.fetch_add(total, std::memory_order_relaxed);
  const int64_t stages[kStages] = {timing.decode_ns(), timing.queue_ns(), timing.compute_ns(),
                                   timing.encode_ns()};
  for (int s = 0; s < kStages; ++s) {
    m.stage_ns[s].fetch_add(NonNegative(stages[s]), std::memory_order_relaxed);
  }
  m.tensor_bytes.fetch_add(tensor_bytes, std::memory_order_relaxed);
}

std::string Metrics::Render(int64_t inflight) const {
  std::string out;
  auto load = [](const std::atomic<uint64_t>& v) { return v.load(std::memory_order_relaxed); };

  Header(&out, "myops_requests_total", "counter", "Finished requests by RPC and gRPC status code.");
  for (int r = 0; r < 2; ++r) {
    for (int c = 0; c < kCodes; ++c) {
      const uint64_t n = load(rpcs_[r].requests[c]);
      if (n == 0 && c != 0) continue;  // OK always; other codes once seen.
      absl::StrAppend(&out, "myops_requests_total{rpc=\"", kRpcNames[r], "\",code=\"",
                      kCodeNames[c], "\"} ", n, "\n");
    }
  }

  Header(&out, "myops_request_duration_seconds", "histogram",
         "Server time of successful requests, from receiving the request to the response "
         "being ready (Timing.total_ns).");
  for (int r = 0; r < 2; ++r) {
    const PerRpc& m = rpcs_[r];
    uint64_t cumulative = 0;
    for (size_t b = 0; b <= kBucketSeconds.size(); ++b) {
      cumulative += load(m.buckets[b]);
      const std::string le =
          b < kBucketSeconds.size() ? absl::StrFormat("%g", kBucketSeconds[b]) : "+Inf";
      absl::StrAppend(&out, "myops_request_duration_seconds_bucket{rpc=\"", kRpcNames[r],
                      "\",le=\"", le, "\"} ", cumulative, "\n");
    }
    absl::StrAppend(&out, "myops_request_duration_seconds_sum{rpc=\"", kRpcNames[r], "\"} ",
                    Seconds(load(m.duration_ns)), "\n");
    absl::StrAppend(&out, "myops_request_duration_seconds_count{rpc=\"", kRpcNames[r], "\"} ",
                    cumulative, "\n");
  }

  Header(&out, "myops_stage_seconds_total", "counter",
         "Summed server time of successful requests per stage of the timing breakdown.");
  for (int r = 0; r < 2; ++r) {
    for (int s = 0; s < kStages; ++s) {
      absl::StrAppend(&out, "myops_stage_seconds_total{rpc=\"", kRpcNames[r], "\",stage=\"",
                      kStageNames[s], "\"} ", Seconds(load(rpcs_[r].stage_ns[s])), "\n");
    }
  }

  Header(&out, "myops_tensor_bytes_total", "counter",
         "Input tensor bytes of successful requests (the output is the same size).");
  for (int r = 0; r < 2; ++r) {
    absl::StrAppend(&out, "myops_tensor_bytes_total{rpc=\"", kRpcNames[r], "\"} ",
                    load(rpcs_[r].tensor_bytes), "\n");
  }

  Header(&out, "myops_inflight_requests", "gauge",
         "Requests admitted and not yet finished (limit: --max-inflight).");
  absl::StrAppend(&out, "myops_inflight_requests ", inflight, "\n");
  return out;
}

}  // namespace myops::server
