// Per-model inference statistics (see pipeline/model_stats.h).
#include "pipeline/model_stats.h"

#include <algorithm>
#include <chrono>

namespace myops::server {
namespace {

constexpr auto kRelaxed = std::memory_order_relaxed;

uint64_t NonNegative(int64_t ns) { return ns > 0 ? static_cast<uint64_t>(ns) : 0; }

}  // namespace

ModelStats::ModelStats(int models)
    : size_(std::max(models, 0)), slots_(new Slot[static_cast<size_t>(size_)]) {}

void ModelStats::Touch(Slot& slot, uint64_t now_ms) {
  // The latest wins: requests finish on many threads, not in order.
  uint64_t last = slot.last_ms.load(kRelaxed);
  while (last < now_ms && !slot.last_ms.compare_exchange_weak(last, now_ms, kRelaxed)) {
  }
}

void ModelStats::RecordSuccess(int model, const RequestStages& stages, uint64_t now_ms) {
  if (model < 0 || model >= size_) return;
  Slot& slot = slots_[static_cast<size_t>(model)];
  slot.success_count.fetch_add(1, kRelaxed);
  slot.success_ns.fetch_add(NonNegative(stages.total_ns), kRelaxed);
  slot.queue_ns.fetch_add(NonNegative(stages.queue_ns), kRelaxed);
  slot.input_ns.fetch_add(NonNegative(stages.decode_ns), kRelaxed);
  slot.infer_ns.fetch_add(NonNegative(stages.compute_ns), kRelaxed);
  slot.output_ns.fetch_add(NonNegative(stages.encode_ns), kRelaxed);
  Touch(slot, now_ms);
}

void ModelStats::RecordFailure(int model, int64_t elapsed_ns, uint64_t now_ms) {
  if (model < 0 || model >= size_) return;
  Slot& slot = slots_[static_cast<size_t>(model)];
  slot.fail_count.fetch_add(1, kRelaxed);
  slot.fail_ns.fetch_add(NonNegative(elapsed_ns), kRelaxed);
  Touch(slot, now_ms);
}

ModelStatsSnapshot ModelStats::Read(int model) const {
  ModelStatsSnapshot s;
  if (model < 0 || model >= size_) return s;
  const Slot& slot = slots_[static_cast<size_t>(model)];
  const uint64_t successes = slot.success_count.load(kRelaxed);
  s.last_inference_ms = slot.last_ms.load(kRelaxed);
  s.inference_count = successes;
  s.execution_count = successes;
  s.success = {successes, slot.success_ns.load(kRelaxed)};
  s.fail = {slot.fail_count.load(kRelaxed), slot.fail_ns.load(kRelaxed)};
  // Every successful request went through every stage once.
  s.queue = {successes, slot.queue_ns.load(kRelaxed)};
  s.compute_input = {successes, slot.input_ns.load(kRelaxed)};
  s.compute_infer = {successes, slot.infer_ns.load(kRelaxed)};
  s.compute_output = {successes, slot.output_ns.load(kRelaxed)};
  return s;
}

uint64_t UnixMillisNow() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

}  // namespace myops::server
