// The myops.v1.Myops gRPC service (callback API). Handlers validate with the codec,
// admit the request against the in-flight limit, and hand the work to the executor;
// they never block and never touch a GPU. Responses are finished from the executor's
// completion callback.
#pragma once

#include <atomic>
#include <cstdint>

#include "absl/status/status.h"
#include "codec.h"
#include "executor.h"
#include "metrics.h"
#include "myops/v1/myops.grpc.pb.h"

namespace myops::server {

struct ServiceLimits {
  TensorLimits tensor;
  int64_t max_message_bytes = int64_t{256} << 20;
  int64_t max_inflight = 64;  // requests admitted at once (unary + stream items)
};

// Counts requests being processed; lock-free and thread-safe.
class InflightLimiter {
 public:
  explicit InflightLimiter(int64_t limit) : limit_(limit) {}
  bool TryAcquire() {
    if (count_.fetch_add(1, std::memory_order_acq_rel) < limit_) return true;
    count_.fetch_sub(1, std::memory_order_acq_rel);
    return false;
  }
  void Release() { count_.fetch_sub(1, std::memory_order_acq_rel); }
  int64_t current() const { return count_.load(std::memory_order_relaxed); }
  int64_t limit() const { return limit_; }

 private:
  const int64_t limit_;
  std::atomic<int64_t> count_{0};
};

// Thread-safe; borrows `executor`, which must outlive the gRPC server using this service.
// The unary ScaleShift is a raw method: its response is encoded by hand so that the output
// tensor is computed straight into its own gRPC slice (no zero-fill, no serialize copy).
class MyopsService final
    : public myops::v1::Myops::WithRawCallbackMethod_ScaleShift<myops::v1::Myops::CallbackService> {
 public:
  MyopsService(Executor* executor, const ServiceLimits& limits);

  grpc::ServerUnaryReactor* ScaleShift(grpc::CallbackServerContext* context,
                                       const grpc::ByteBuffer* request,
                                       grpc::ByteBuffer* response) override;

  grpc::ServerBidiReactor<myops::v1::ScaleShiftRequest, myops::v1::ScaleShiftStreamResponse>*
  ScaleShiftStream(grpc::CallbackServerContext* context) override;

  grpc::ServerUnaryReactor* ServerInfo(grpc::CallbackServerContext* context,
                                       const myops::v1::ServerInfoRequest* request,
                                       myops::v1::ServerInfoResponse* response) override;

  // Gives the buffer a request's output is written to: input.bytes bytes, valid until the
  // request's `done` has run.
  using OutputSink = std::function<MutableTensorView(const TensorView& input)>;
  using Done = std::function<void(absl::Status, const myops::v1::Timing&)>;
  // Where the input tensor's data is: `size` bytes, which `contiguous` returns as one
  // buffer (valid until `done` has run). Called once, only for a request that passed
  // admission and validation, so a rejected request costs no copy.
  struct InputData {
    uint64_t size = 0;
    std::function<const void*()> contiguous;
  };

  // Validates `request` (whose input's data is `input_data`), takes its output buffer from
  // `output` and submits it; calls `done` exactly once with the final status and (on
  // success) the timing, which counts from `received` (when the handler got the request's
  // bytes). Shared by the unary and streaming RPCs.
  void Process(const myops::v1::ScaleShiftRequest& request, InputData input_data,
               std::chrono::steady_clock::time_point received,
               std::chrono::system_clock::time_point deadline, std::function<bool()> is_cancelled,
               OutputSink output, Done done);

  // Request metrics (thread-safe) and the requests in flight now, for the metrics endpoint.
  Metrics& metrics() { return metrics_; }
  int64_t inflight() const { return inflight_.current(); }

 private:
  Executor* executor_;
  ServiceLimits limits_;
  InflightLimiter inflight_;
  Metrics metrics_;
  std::atomic<unsigned> round_robin_{0};
};

// The one conversion from absl::Status to grpc::Status.
grpc::Status ToGrpcStatus(const absl::Status& status);

}  // namespace myops::server
