// Per-model inference statistics: what Triton's "statistics" extension of the Open
// Inference Protocol reports (gRPC ModelStatistics, REST /v2/models/stats), kept per
// served operator (a model is a served op, frontends/oip/codec.h). Protocol-neutral: neither
// torch nor protobuf; the pipeline (pipeline/pipeline.h) records every finished request of a
// known op, whichever front end carried it, and front ends render Read()'s snapshots.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

namespace myops::server {

// One model's statistics at one moment (Triton's ModelStatistics without its names). A
// request counts once the server knows its model: requests refused before that (bytes
// that do not parse, a model that does not exist, no memory budget to parse them) count
// for no model.
struct ModelStatsSnapshot {
  struct Duration {
    uint64_t count = 0;
    uint64_t ns = 0;  // cumulative
  };
  // Milliseconds since the Unix epoch when the last request of the model (successful or
  // not) finished; 0: none yet.
  uint64_t last_inference_ms = 0;
  // Inferences performed and model executions: without batching, both are the successful
  // requests.
  uint64_t inference_count = 0;
  uint64_t execution_count = 0;
  Duration success;  // successful requests, from received to the results ready to send
  Duration fail;     // failed requests, from received to the failure
  // Per successful request, the pipeline's stages (myops.v1 Timing): queue: waiting for
  // an executor worker (queue_ns); compute_input: parsing, decoding and binding the
  // arguments (decode_ns); compute_infer: running the op (compute_ns); compute_output:
  // holding the results for the response (encode_ns).
  Duration queue;
  Duration compute_input;
  Duration compute_infer;
  Duration compute_output;
};

// A successful request's stages, in nanoseconds (negative values count as 0).
struct RequestStages {
  int64_t decode_ns = 0;
  int64_t queue_ns = 0;
  int64_t compute_ns = 0;
  int64_t encode_ns = 0;
  int64_t total_ns = 0;
};

// Statistics of `models` models, indexed as the OpRegistry's ops. Thread-safe and
// lock-free: Record* add to per-model atomics (no lookup, no allocation); Read may run
// at any time on any thread and reads each value atomically, with no snapshot across
// values (a request being recorded may show in one counter and not yet in another).
// Indices outside [0, size()) are ignored by Record* (a request of no known model).
class ModelStats {
 public:
  explicit ModelStats(int models);
  ModelStats(const ModelStats&) = delete;
  ModelStats& operator=(const ModelStats&) = delete;

  int size() const { return size_; }

  // A request of model `model` finished successfully at `now_ms` (Unix epoch ms).
  void RecordSuccess(int model, const RequestStages& stages, uint64_t now_ms);
  // A request of model `model` failed `elapsed_ns` after it was received, at `now_ms`.
  void RecordFailure(int model, int64_t elapsed_ns, uint64_t now_ms);

  // Model `model`'s statistics now; all zero for an index outside [0, size()).
  ModelStatsSnapshot Read(int model) const;

 private:
  // One model's counters, on their own cache lines (models run concurrently).
  struct alignas(64) Slot {
    std::atomic<uint64_t> success_count{0};
    std::atomic<uint64_t> success_ns{0};
    std::atomic<uint64_t> fail_count{0};
    std::atomic<uint64_t> fail_ns{0};
    std::atomic<uint64_t> queue_ns{0};
    std::atomic<uint64_t> input_ns{0};
    std::atomic<uint64_t> infer_ns{0};
    std::atomic<uint64_t> output_ns{0};
    std::atomic<uint64_t> last_ms{0};
  };
  void Touch(Slot& slot, uint64_t now_ms);

  const int size_;
  const std::unique_ptr<Slot[]> slots_;
};

// Milliseconds since the Unix epoch, now.
uint64_t UnixMillisNow();

}  // namespace myops::server
