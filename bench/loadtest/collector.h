// One measurement window's collector of myops-loadtest (runner.cc): what requests
// measured, recorded from worker threads and gRPC callbacks at once.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>

#include "absl/status/status.h"
#include "myops/client/results.h"
#include "runner.h"

namespace myops::loadtest {

// One window's measurements. Thread-safe: workers and gRPC callbacks record concurrently.
class Collector {
 public:
  void Ok(int64_t latency_ns, const myops::client::Timing& t, int64_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    s_.ok++;
    s_.payload_bytes += bytes;
    s_.latency.Record(latency_ns);
    s_.decode.Record(t.decode_ns);
    s_.queue.Record(t.queue_ns);
    s_.compute.Record(t.compute_ns);
    s_.encode.Record(t.encode_ns);
    s_.server_total.Record(t.total_ns);
    s_.replicas[t.replica]++;
    done_.fetch_add(1, std::memory_order_relaxed);
  }
  // A success over a protocol without a per-request timing breakdown (--protocol
  // kserve): latency and bytes only.
  void Ok(int64_t latency_ns, int64_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    s_.ok++;
    s_.payload_bytes += bytes;
    s_.latency.Record(latency_ns);
    done_.fetch_add(1, std::memory_order_relaxed);
  }
  void Error(const absl::Status& status) {
    std::lock_guard<std::mutex> lock(mu_);
    s_.errors[absl::StatusCodeToString(status.code())]++;
    done_.fetch_add(1, std::memory_order_relaxed);
  }
  int64_t done() const { return done_.load(std::memory_order_relaxed); }
  Stats Snapshot(double seconds) {
    std::lock_guard<std::mutex> lock(mu_);
    Stats copy = s_;
    copy.seconds = seconds;
    return copy;
  }

 private:
  std::mutex mu_;
  Stats s_;
  std::atomic<int64_t> done_{0};
};

}  // namespace myops::loadtest
