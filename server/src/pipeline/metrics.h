// Request metrics of myops-server, kept in prometheus-cpp counters and histograms:
// requests by RPC (each front end registers its own at start-up) and status code, the server-side
// latency of successful requests as a histogram, the sums of the timing breakdown's stages, tensor
// bytes; plus gauges that other parts of the server read at scrape time (AddGauge). Served over
// HTTP by MetricsEndpoint (http/metrics_endpoint.h) when enabled.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "pipeline/timing.h"

namespace prometheus {
class Collectable;
class Counter;
class Histogram;
class Registry;
template <typename T>
class Family;
}  // namespace prometheus

namespace myops::server {

class GaugeCollectable;  // pipeline/metrics.cc

// Thread-safe. Record may run on any thread: it adds to prometheus-cpp counters (atomic)
// and observes a histogram (a short per-RPC mutex inside prometheus-cpp); every series
// is looked up once, when its RPC is added, except a status code's counter, which is
// created the first time that code is recorded (codes never seen are not exposed).
// AddRpc, AddGauge and Render may run on any thread at any time. Scrapes (Render, the
// endpoint) read each value atomically, with no snapshot across values, as Prometheus
// clients do.
class Metrics {
 public:
  // One RPC's series, as a front end names it (label rpc="..."): the handle that Record
  // takes. Owned by its Metrics, valid as long as it.
  class Rpc;

  // `operators`: how many ops the registry holds (RecordOperator's indices).
  explicit Metrics(int operators = 0);
  ~Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // The series of the RPC `name` (a front end's, e.g. "ModelInfer"), added the first time
  // it is named. Front ends add theirs at start-up, so that every series is exposed (at
  // zero) before the first request.
  Rpc* AddRpc(const std::string& name);

  // One finished request of `rpc` (from AddRpc). `timing` and `tensor_bytes` (the input
  // tensor's size) count only when `status` is OK.
  void Record(Rpc* rpc, const absl::Status& status, const Timing& timing, uint64_t tensor_bytes);

  // One finished generic call of the registry's op number `op`, named `name` (op -1, name
  // "": it named no served operator; only the registry's names may become label values,
  // never a client's string). Lock-free once the (op, code) series exists.
  void RecordOperator(int op, const std::string& name, const absl::Status& status);

  // One stream ended for a stall (frontends/grpc/stream_reactor.h); thread-safe.
  void StreamStalled();
  // One unary call cancelled for a response not taken (frontends/grpc/unary_reactor.h).
  void ResponseStalled();

  // Adds a gauge without labels whose value is `read()` at each scrape, e.g.
  // AddGauge("myops_memory_held_bytes", "Bytes held for requests.", [&budget] { ... }).
  // `read` runs on the endpoint's scrape threads, possibly several at once, for as long
  // as this Metrics lives (or until the endpoint stops, whichever is first): it must be
  // thread-safe, must not block for long, and must not call AddGauge. InvalidArgument
  // when `name` is not a valid Prometheus metric name or `read` is empty; AlreadyExists
  // when a series of this Metrics already has that name.
  absl::Status AddGauge(std::string name, std::string help, std::function<double()> read);

  // The exposition text (Prometheus text format 0.0.4) of every series above: what the
  // endpoint serves, less the endpoint's own exposer_* series.
  std::string Render() const;

  // What the endpoint registers with its prometheus::Exposer (which keeps weak pointers).
  std::vector<std::shared_ptr<prometheus::Collectable>> Collectables() const;

  // Upper bounds of the latency histogram's buckets, in seconds (then +Inf).
  static constexpr std::array<double, 16> kBucketSeconds = {
      0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
      0.05,   0.1,     0.25,   0.5,   1.0,    2.5,   5.0,  10.0};

 private:
  static constexpr int kCodes = 17;  // gRPC status codes 0..16
  static constexpr int kStages = 4;  // decode, queue, compute, encode

  std::shared_ptr<prometheus::Registry> registry_;  // Owns every family and child below.
  prometheus::Family<prometheus::Counter>* requests_ = nullptr;
  prometheus::Family<prometheus::Counter>* op_calls_ = nullptr;
  prometheus::Family<prometheus::Histogram>* duration_ = nullptr;
  prometheus::Family<prometheus::Counter>* stage_seconds_ = nullptr;
  prometheus::Family<prometheus::Counter>* tensor_bytes_ = nullptr;
  prometheus::Counter* streams_stalled_ = nullptr;
  prometheus::Counter* responses_stalled_ = nullptr;
  absl::Mutex rpcs_mu_;
  std::vector<std::unique_ptr<Rpc>> rpcs_ ABSL_GUARDED_BY(rpcs_mu_);  // never shrinks
  // op_calls_' children per op and code, null until first recorded.
  using OpCounters = std::array<std::atomic<prometheus::Counter*>, kCodes>;
  const int operators_;
  std::unique_ptr<OpCounters[]> op_counters_;
  std::shared_ptr<GaugeCollectable> gauges_;
};

}  // namespace myops::server
