// The request metrics' prometheus-cpp series and the scrape-time gauges (see pipeline/metrics.h).
#include "pipeline/metrics.h"

#include <algorithm>

#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "prometheus/check_names.h"
#include "prometheus/collectable.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/histogram.h"
#include "prometheus/metric_family.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"

namespace myops::server {
namespace {

// The families of every Metrics, with or without series yet (prometheus-cpp's Collect
// leaves out families that have none, so AddGauge checks this list instead).
constexpr const char* kRequests = "myops_requests_total";
constexpr const char* kOperatorCalls = "myops_operator_calls_total";
constexpr const char* kDuration = "myops_request_duration_seconds";
constexpr const char* kStageSeconds = "myops_stage_seconds_total";
constexpr const char* kTensorBytes = "myops_tensor_bytes_total";
constexpr const char* kStreamsStalled = "myops_streams_stalled_total";
constexpr const char* kResponsesStalled = "myops_responses_stalled_total";
constexpr const char* kFamilies[] = {kRequests,    kOperatorCalls,  kDuration,        kStageSeconds,
                                     kTensorBytes, kStreamsStalled, kResponsesStalled};
constexpr const char* kStageNames[] = {"decode", "queue", "compute", "encode"};
constexpr const char* kCodeNames[] = {
    "OK",        "CANCELLED",      "UNKNOWN",           "INVALID_ARGUMENT",   "DEADLINE_EXCEEDED",
    "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
    "ABORTED",   "OUT_OF_RANGE",   "UNIMPLEMENTED",     "INTERNAL",           "UNAVAILABLE",
    "DATA_LOSS", "UNAUTHENTICATED"};

double Seconds(int64_t ns) { return ns > 0 ? static_cast<double>(ns) * 1e-9 : 0.0; }

}  // namespace

// One RPC's series: its label value, then the children of each family for it.
class Metrics::Rpc {
 public:
  std::string name;
  // Children of requests_; null until the code is first recorded (OK: set at AddRpc).
  std::array<std::atomic<prometheus::Counter*>, kCodes> requests{};
  prometheus::Histogram* duration = nullptr;
  std::array<prometheus::Counter*, kStages> stage_seconds{};
  prometheus::Counter* tensor_bytes = nullptr;
};

// The gauges of AddGauge: one unlabelled series each, its value read at Collect().
// Thread-safe: the list is guarded by mu_; the read functions are called outside it.
class GaugeCollectable final : public prometheus::Collectable {
 public:
  struct Gauge {
    std::string name;
    std::string help;
    std::function<double()> read;
  };

  // False (and nothing added) when a gauge of that name exists.
  bool Add(Gauge gauge) {
    absl::MutexLock lock(&mu_);
    for (const auto& g : gauges_) {
      if (g->name == gauge.name) return false;
    }
    gauges_.push_back(std::make_shared<const Gauge>(std::move(gauge)));
    return true;
  }

  std::vector<prometheus::MetricFamily> Collect() const override {
    std::vector<std::shared_ptr<const Gauge>> gauges;
    {
      absl::MutexLock lock(&mu_);
      gauges = gauges_;
    }
    std::vector<prometheus::MetricFamily> families;
    families.reserve(gauges.size());
    for (const auto& g : gauges) {
      prometheus::MetricFamily family;
      family.name = g->name;
      family.help = g->help;
      family.type = prometheus::MetricType::Gauge;
      family.metric.emplace_back().gauge.value = g->read();
      families.push_back(std::move(family));
    }
    return families;
  }

 private:
  mutable absl::Mutex mu_;
  std::vector<std::shared_ptr<const Gauge>> gauges_ ABSL_GUARDED_BY(mu_);
};

Metrics::Metrics(int operators)
    : registry_(std::make_shared<prometheus::Registry>()),
      operators_(std::max(operators, 0)),
      op_counters_(std::make_unique<OpCounters[]>(static_cast<size_t>(operators_))),
      gauges_(std::make_shared<GaugeCollectable>()) {
  requests_ = &prometheus::BuildCounter()
                   .Name(kRequests)
                   .Help("Finished requests by RPC and gRPC status code.")
                   .Register(*registry_);
  op_calls_ = &prometheus::BuildCounter()
                   .Name(kOperatorCalls)
                   .Help(
                       "Finished Call and CallStream requests by served operator and gRPC "
                       "status code (op=\"\" when the request named no served operator).")
                   .Register(*registry_);
  duration_ = &prometheus::BuildHistogram()
                   .Name(kDuration)
                   .Help(
                       "Server time of successful requests, from receiving the request to "
                       "the response being ready (Timing.total_ns).")
                   .Register(*registry_);
  stage_seconds_ = &prometheus::BuildCounter()
                        .Name(kStageSeconds)
                        .Help(
                            "Summed server time of successful requests per stage of the timing "
                            "breakdown.")
                        .Register(*registry_);
  tensor_bytes_ = &prometheus::BuildCounter()
                       .Name(kTensorBytes)
                       .Help(
                           "Input tensor bytes of successful requests (ScaleShift: the output is "
                           "the same size; Call: all argument tensors).")
                       .Register(*registry_);
  streams_stalled_ = &prometheus::BuildCounter()
                          .Name(kStreamsStalled)
                          .Help(
                              "Streams ended because they held memory for a client that made "
                              "no progress for --stall-timeout-ms.")
                          .Register(*registry_)
                          .Add({});
  responses_stalled_ = &prometheus::BuildCounter()
                            .Name(kResponsesStalled)
                            .Help(
                                "Unary calls cancelled because their client did not take the "
                                "response within --stall-timeout-ms.")
                            .Register(*registry_)
                            .Add({});
}

void Metrics::StreamStalled() { streams_stalled_->Increment(); }
void Metrics::ResponseStalled() { responses_stalled_->Increment(); }

Metrics::~Metrics() = default;

Metrics::Rpc* Metrics::AddRpc(const std::string& name) {
  absl::MutexLock lock(&rpcs_mu_);
  for (const auto& rpc : rpcs_) {
    if (rpc->name == name) return rpc.get();
  }
  auto rpc = std::make_unique<Rpc>();
  rpc->name = name;
  rpc->requests[0].store(&requests_->Add({{"rpc", name}, {"code", kCodeNames[0]}}));
  const prometheus::Histogram::BucketBoundaries bounds(kBucketSeconds.begin(),
                                                       kBucketSeconds.end());
  rpc->duration = &duration_->Add({{"rpc", name}}, bounds);
  for (int s = 0; s < kStages; ++s) {
    rpc->stage_seconds[s] = &stage_seconds_->Add({{"rpc", name}, {"stage", kStageNames[s]}});
  }
  rpc->tensor_bytes = &tensor_bytes_->Add({{"rpc", name}});
  rpcs_.push_back(std::move(rpc));
  return rpcs_.back().get();
}

void Metrics::Record(Rpc* rpc, const absl::Status& status, const Timing& timing,
                     uint64_t tensor_bytes) {
  Rpc& m = *rpc;
  const int raw_code = static_cast<int>(status.code());
  const int code = raw_code >= 0 && raw_code < kCodes ? raw_code : 2;  // UNKNOWN
  prometheus::Counter* requests = m.requests[code].load(std::memory_order_acquire);
  if (requests == nullptr) {  // First time this code is seen: Add is locked and idempotent.
    requests = &requests_->Add({{"rpc", m.name}, {"code", kCodeNames[code]}});
    m.requests[code].store(requests, std::memory_order_release);
  }
  requests->Increment();
  if (!status.ok()) return;
  m.duration->Observe(Seconds(timing.total_ns));
  const int64_t stages[kStages] = {timing.decode_ns, timing.queue_ns, timing.compute_ns,
                                   timing.encode_ns};
  for (int s = 0; s < kStages; ++s) m.stage_seconds[s]->Increment(Seconds(stages[s]));
  m.tensor_bytes->Increment(static_cast<double>(tensor_bytes));
}

void Metrics::RecordOperator(int op, const std::string& name, const absl::Status& status) {
  const int raw_code = static_cast<int>(status.code());
  const int code = raw_code >= 0 && raw_code < kCodes ? raw_code : 2;  // UNKNOWN
  if (op < 0 || op >= operators_) {
    op_calls_->Add({{"op", name}, {"code", kCodeNames[code]}}).Increment();
    return;
  }
  std::atomic<prometheus::Counter*>& slot = op_counters_[static_cast<size_t>(op)][code];
  prometheus::Counter* counter = slot.load(std::memory_order_acquire);
  if (counter == nullptr) {  // First time: Add is locked and idempotent.
    counter = &op_calls_->Add({{"op", name}, {"code", kCodeNames[code]}});
    slot.store(counter, std::memory_order_release);
  }
  counter->Increment();
}

absl::Status Metrics::AddGauge(std::string name, std::string help, std::function<double()> read) {
  if (!prometheus::CheckMetricName(name)) {
    return absl::InvalidArgumentError(
        absl::StrCat("gauge name \"", name, "\" is not a valid Prometheus metric name"));
  }
  if (!read) {
    return absl::InvalidArgumentError(absl::StrCat("gauge \"", name, "\" has no read function"));
  }
  const auto exists = [&name] { return absl::StrCat("metric \"", name, "\" already exists"); };
  for (const char* family : kFamilies) {
    if (name == family) return absl::AlreadyExistsError(exists());
  }
  std::string message = exists();
  if (!gauges_->Add({std::move(name), std::move(help), std::move(read)})) {
    return absl::AlreadyExistsError(message);
  }
  return absl::OkStatus();
}

std::string Metrics::Render() const {
  std::vector<prometheus::MetricFamily> families;
  for (const auto& collectable : Collectables()) {
    for (auto& family : collectable->Collect()) families.push_back(std::move(family));
  }
  return prometheus::TextSerializer().Serialize(families);
}

std::vector<std::shared_ptr<prometheus::Collectable>> Metrics::Collectables() const {
  return {registry_, gauges_};
}

}  // namespace myops::server
