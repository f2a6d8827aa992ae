// The myops.v1.Myops gRPC service (callback API). Handlers parse and validate with the
// codec, admit the request against the in-flight limit and the memory budget, and hand
// the work to the executor; they never block and never touch a GPU. Responses are
// finished from the executor's completion callback.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>

#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/slice.h>

#include "absl/status/status.h"
#include "auth.h"
#include "codec.h"
#include "executor.h"
#include "memory_budget.h"
#include "metrics.h"
#include "model_stats.h"
#include "myops/v1/myops.grpc.pb.h"
#include "runtime/value.h"
#include "shm/shared_memory.h"

namespace myops::server {

struct ServiceLimits {
  TensorLimits tensor;
  int64_t max_message_bytes = int64_t{256} << 20;
  int64_t max_inflight = 64;  // requests admitted at once (unary + stream items)
  // The memory budget (memory_budget.h): bytes held for requests at once, inputs and
  // outputs, including computed stream responses not yet written. 0: the default,
  // DefaultMemoryBudgetBytes().
  int64_t max_inflight_bytes = 0;
  int64_t max_streams = 1024;  // ScaleShiftStream RPCs open at once; more: RESOURCE_EXHAUSTED
  int64_t max_concurrent_streams = 256;  // HTTP/2 streams (RPCs) per connection, gRPC's limit
};

// Counts what is open at once against a limit (requests, streams); lock-free and
// thread-safe.
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

// One request on its way through the pipeline, whichever RPC carried it: the parsed
// message (all but the input's data), the input's data in the received slices (or
// gathered from them), the output's slice, and the budget reserved for both. Owned by
// its RPC's reactor until the response has been written.
struct RequestState {
  myops::v1::ScaleShiftRequest request;
  wire::TensorData input;
  grpc::Slice gathered;  // the input, copied: when split over slices or misaligned
  grpc::Slice output;
  BudgetReservation reservation;

  // Whether the input must be copied to be contiguous and aligned to `alignment` (its
  // item size: kernels load whole elements, and a misaligned load is undefined behaviour).
  bool MustGather(int64_t alignment) const;
  // The input's bytes, contiguous and aligned to `alignment` (copied into `gathered` when
  // MustGather).
  const void* ContiguousInput(int64_t alignment);
};

// One generic call on its way through the pipeline, protocol-neutral: the operator's
// name, the arguments as values (views into the front end's message, which its derived
// state owns), the requested device; then the call bound to the op's schema (results kept
// alive by the call), and the budget held for the request and its results. Owned by its
// RPC's reactor until the response has been written.
struct CallState {
  std::string op;      // "namespace::name[.overload]", as the client named it
  std::string device;  // as ScaleShiftRequest.device
  std::vector<NamedValue> args;
  OpCall call;
  BudgetReservation request_reservation;
  BudgetReservation result_reservation;
  int64_t received_bytes = 0;
  // The front end's own limit on the request, from its receipt (KServe's "timeout"
  // parameter), on top of the RPC's deadline; 0: none.
  int64_t timeout_us = 0;
  // Whether the front end sends results in pieces (CallStream's chunked results): they
  // may then exceed max_message_bytes, the memory budget still bounding them.
  bool chunked_results = false;
};

// Thread-safe; borrows `executor`, which must outlive the gRPC server using this service.
// Both ScaleShift RPCs are raw methods: requests are parsed by hand (bounded, see
// wire::ParseWithTensorData) and responses encoded by hand, so the output tensor is
// computed straight into its own gRPC slice (no zero-fill, no serialize copy).
// Call and CallStream are raw methods too (call_service.cc): requests are bounded before
// protobuf parses them (wire::CheckCallRequestHead) and result tensors are sent from their
// own memory.
class MyopsService final : public myops::v1::Myops::WithRawCallbackMethod_ScaleShift<
                               myops::v1::Myops::WithRawCallbackMethod_ScaleShiftStream<
                                   myops::v1::Myops::WithCallbackMethod_ServerInfo<
                                       myops::v1::Myops::WithRawCallbackMethod_Call<
                                           myops::v1::Myops::WithRawCallbackMethod_CallStream<
                                               myops::v1::Myops::WithCallbackMethod_ListOperators<
                                                   myops::v1::Myops::Service>>>>>> {
 public:
  // `auth` checks every call of this service (off by default).
  // `shared_memory`: the registered regions requests may name (borrowed, must outlive
  // the service); null when the server does not accept shared memory.
  MyopsService(Executor* executor, const ServiceLimits& limits, BearerAuth auth = {},
               SharedMemoryRegistry* shared_memory = nullptr);

  grpc::ServerUnaryReactor* ScaleShift(grpc::CallbackServerContext* context,
                                       const grpc::ByteBuffer* request,
                                       grpc::ByteBuffer* response) override;

  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* ScaleShiftStream(
      grpc::CallbackServerContext* context) override;

  grpc::ServerUnaryReactor* ServerInfo(grpc::CallbackServerContext* context,
                                       const myops::v1::ServerInfoRequest* request,
                                       myops::v1::ServerInfoResponse* response) override;

  grpc::ServerUnaryReactor* Call(grpc::CallbackServerContext* context,
                                 const grpc::ByteBuffer* request,
                                 grpc::ByteBuffer* response) override;

  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* CallStream(
      grpc::CallbackServerContext* context) override;

  grpc::ServerUnaryReactor* ListOperators(grpc::CallbackServerContext* context,
                                          const myops::v1::ListOperatorsRequest* request,
                                          myops::v1::ListOperatorsResponse* response) override;

  using Done = std::function<void(absl::Status, const myops::v1::Timing&)>;

  // Admits `state` (in-flight slot, then the memory budget for its input and output),
  // validates it, allocates its output and submits it; calls `done` exactly once with
  // the final status and (on success) the timing, which counts from `received` (when the
  // handler got the request's bytes). The in-flight slot is released before `done`; the
  // budget stays reserved in `state` until its owner drops it. Shared by both RPCs.
  void Process(RequestState* state, std::chrono::steady_clock::time_point received,
               std::chrono::system_clock::time_point deadline, std::function<bool()> is_cancelled,
               Done done);

  // A generic call's steps (call_service.cc): reserves the memory budget for a request of
  // `bytes` received bytes (as received and as parsed) before it is parsed...
  absl::Status ReserveCallRequest(int64_t bytes, CallState* state) {
    return ReserveCallRequest(bytes, 2 * bytes, state);
  }
  // (or `held` bytes for `bytes` received, where the front end's parsing holds more)...
  absl::Status ReserveCallRequest(int64_t bytes, int64_t held, CallState* state);
  // ...then, once the front end has filled op, device and args, as Process: resolves the
  // op, admits, binds the arguments, picks a device with a kernel and submits; on
  // success also reserves the result tensors' bytes. Records the request in
  // model_stats() once the op is resolved.
  void ProcessCall(CallState* state, std::chrono::steady_clock::time_point received,
                   std::chrono::system_clock::time_point deadline,
                   std::function<bool()> is_cancelled, Done done);
  // Reserves `bytes` for what a front end builds beyond the request and the results (JSON
  // text, inputs copied out of shared memory); RESOURCE_EXHAUSTED as for a request. Held
  // in `out` until it is dropped.
  absl::Status ReserveWorkingMemory(int64_t bytes, BudgetReservation* out) {
    return Reserve(bytes, out);
  }
  const ServiceLimits& limits() const { return limits_; }
  // Null unless the server was started with --allow-shared-memory. Thread-safe.
  SharedMemoryRegistry* shared_memory() const { return shared_memory_; }
  const Executor& executor() const { return *executor_; }

  // Request metrics (thread-safe), with the gauge myops_inflight_requests (inflight()),
  // the requests in flight now and the memory budget. Whatever serves the metrics must
  // stop before this service is destroyed.
  Metrics& metrics() { return metrics_; }
  int64_t inflight() const { return inflight_.current(); }
  const MemoryBudget& budget() const { return budget_; }

  // Per-model statistics (one model per op of the registry, by index), recorded by
  // Process (as myops::scale_shift) and ProcessCall for every front end; thread-safe.
  const ModelStats& model_stats() const { return model_stats_; }
  // Records a request of op `model` (a registry index; -1: none) that a front end
  // refused after it knew the model and before Process/ProcessCall took it, e.g. inputs
  // that do not decode; `received` as given to ProcessCall.
  void RecordModelFailure(int model, std::chrono::steady_clock::time_point received);
  // The registry index of myops::scale_shift (what the ScaleShift RPCs call); -1 when it
  // is not served.
  int scale_shift_model() const { return scale_shift_model_; }

  // Open ScaleShiftStream RPCs; thread-safe.
  bool TryOpenStream();
  void CloseStream() { streams_.Release(); }

 private:
  // Takes an in-flight slot, or says why not (RESOURCE_EXHAUSTED); Release when done.
  absl::Status Admit();
  // Reserves `need` bytes into `out`, or says why not (RESOURCE_EXHAUSTED).
  absl::Status Reserve(int64_t need, BudgetReservation* out);
  // Records a finished request of op `model` in model_stats_: its stages from `timing`
  // when `status` is OK, else the time since `received`.
  void RecordModel(int model, const absl::Status& status,
                   std::chrono::steady_clock::time_point received, const myops::v1::Timing& timing);

  Executor* executor_;
  ServiceLimits limits_;
  SharedMemoryRegistry* const shared_memory_;
  const BearerAuth auth_;
  InflightLimiter inflight_;
  MemoryBudget budget_;
  Metrics metrics_;
  ModelStats model_stats_;
  const int scale_shift_model_;
  InflightLimiter streams_;
  std::atomic<unsigned> round_robin_{0};
};

// A successful request's Timing: its stages, the executor's share, the total from `start`.
myops::v1::Timing MakeTiming(std::chrono::steady_clock::time_point start, int64_t decode_ns,
                             int64_t encode_ns, const JobTiming& job);

// The one conversion from absl::Status to grpc::Status.
grpc::Status ToGrpcStatus(const absl::Status& status);

}  // namespace myops::server
