// The request metrics' prometheus-cpp series and the scrape-time gauges (see metrics.h).
#include "metrics.h"

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

constexpr const char* kRpcNames[] = {"ScaleShift",    "ScaleShiftStream", "Call",
                                     "CallStream",    "ModelInfer",       "ModelStreamInfer",
                                     "HttpModelInfer"};
constexpr const char* kStageNames[] = {"decode", "queue", "compute", "encode"};
constexpr const char* kCodeNames[] = {
    "OK",        "CANCELLED",      "UNKNOWN",           "INVALID_ARGUMENT",   "DEADLINE_EXCEEDED",
    "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
    "ABORTED",   "OUT_OF_RANGE",   "UNIMPLEMENTED",     "INTERNAL",           "UNAVAILABLE",
    "DATA_LOSS", "UNAUTHENTICATED"};

double Seconds(int64_t ns) { return ns > 0 ? static_cast<double>(ns) * 1e-9 : 0.0; }

}  // namespace

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
                   .Name("myops_requests_total")
                   .Help("Finished requests by RPC and gRPC status code.")
                   .Register(*registry_);
  op_calls_ = &prometheus::BuildCounter()
                   .Name("myops_operator_calls_total")
                   .Help(
                       "Finished Call and CallStream requests by served operator and gRPC "
                       "status code (op=\"\" when the request named no served operator).")
                   .Register(*registry_);
  auto& duration = prometheus::BuildHistogram()
                       .Name("myops_request_duration_seconds")
                       .Help(
                           "Server time of successful requests, from receiving the request to "
                           "the response being ready (Timing.total_ns).")
                       .Register(*registry_);
  auto& stages = prometheus::BuildCounter()
                     .Name("myops_stage_seconds_total")
                     .Help(
                         "Summed server time of successful requests per stage of the timing "
                         "breakdown.")
                     .Register(*registry_);
  auto& bytes = prometheus::BuildCounter()
                    .Name("myops_tensor_bytes_total")
                    .Help(
                        "Input tensor bytes of successful requests (ScaleShift: the output is "
                        "the same size; Call: all argument tensors).")
                    .Register(*registry_);
  const prometheus::Histogram::BucketBoundaries bounds(kBucketSeconds.begin(),
                                                       kBucketSeconds.end());
  for (int r = 0; r < kRpcs; ++r) {
    PerRpc& m = rpcs_[r];
    m.requests[0].store(&requests_->Add({{"rpc", kRpcNames[r]}, {"code", kCodeNames[0]}}));
    m.duration = &duration.Add({{"rpc", kRpcNames[r]}}, bounds);
    for (int s = 0; s < kStages; ++s) {
      m.stage_seconds[s] = &stages.Add({{"rpc", kRpcNames[r]}, {"stage", kStageNames[s]}});
    }
    m.tensor_bytes = &bytes.Add({{"rpc", kRpcNames[r]}});
  }
}

Metrics::~Metrics() = default;

void Metrics::Record(Rpc rpc, const absl::Status& status, const myops::v1::Timing& timing,
                     uint64_t tensor_bytes) {
  PerRpc& m = rpcs_[static_cast<int>(rpc)];
  const int raw_code = static_cast<int>(status.code());
  const int code = raw_code >= 0 && raw_code < kCodes ? raw_code : 2;  // UNKNOWN
  prometheus::Counter* requests = m.requests[code].load(std::memory_order_acquire);
  if (requests == nullptr) {  // First time this code is seen: Add is locked and idempotent.
    requests =
        &requests_->Add({{"rpc", kRpcNames[static_cast<int>(rpc)]}, {"code", kCodeNames[code]}});
    m.requests[code].store(requests, std::memory_order_release);
  }
  requests->Increment();
  if (!status.ok()) return;
  m.duration->Observe(Seconds(timing.total_ns()));
  const int64_t stages[kStages] = {timing.decode_ns(), timing.queue_ns(), timing.compute_ns(),
                                   timing.encode_ns()};
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
  for (const auto& family : registry_->Collect()) {  // Fixed at construction.
    if (family.name == name) return absl::AlreadyExistsError(exists());
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
