// The pipeline: what every front end's requests go through, whichever protocol carried
// them. Admission (in-flight slots), the memory budget, deadlines and timeouts, the one
// device choice, submission to the executor, per-model statistics and metrics. A front
// end parses its messages into a CallState (op, argument values, device, deadline) and
// encodes the results and the protocol-neutral Timing it gets back. No protobuf, no gRPC.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "pipeline/memory_budget.h"
#include "pipeline/metrics.h"
#include "pipeline/model_stats.h"
#include "pipeline/timing.h"
#include "runtime/executor.h"
#include "runtime/tensor_view.h"
#include "runtime/value.h"
#include "shm/shared_memory.h"

namespace myops::server {

class CallCharge;
class Pipeline;

struct ServiceLimits {
  TensorLimits tensor;
  int64_t max_message_bytes = int64_t{256} << 20;
  int64_t max_inflight = 64;  // requests admitted at once (unary + stream items)
  // The memory budget (pipeline/memory_budget.h): bytes held for requests at once, inputs and
  // outputs, including computed stream responses not yet written. 0: the default,
  // DefaultMemoryBudgetBytes().
  int64_t max_inflight_bytes = 0;
  // The part of the memory budget one client may hold (Pipeline::AccountOf: a tenant where
  // tokens are set, else a connection), in (0, 1]: the rest stays for the others.
  double max_client_share = 0.25;
  // Streaming RPCs open at once, of every front end (ScaleShiftStream, CallStream,
  // ModelStreamInfer); more: RESOURCE_EXHAUSTED.
  int64_t max_streams = 1024;
  int64_t max_concurrent_streams = 256;  // HTTP/2 streams (RPCs) per connection, gRPC's limit
  // HTTP/2 receive window per stream and per connection (frontends/grpc/http2_window.h):
  // requests up to about this size arrive without waiting a round trip for window, and a
  // stream the server stops reading holds at most this much in the transport.
  int64_t http2_window_bytes = int64_t{512} << 10;
  // How long a stream may hold memory for its client without progress: an unfinished
  // chunked request (CallStream) waiting for its next chunk, or a response waiting for the
  // client to take it. Past it the stream is ended and what it held returns.
  int64_t stall_timeout_ms = 10000;
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

// One generic call on its way through the pipeline, protocol-neutral: the operator's
// name, the arguments as values (views into the front end's message, which its derived
// state owns), the requested device; then the call bound to the op's schema (results kept
// alive by the call), and the budget held for the request and its results. Owned by its
// front end's call (a reactor, an HTTP worker) until the response has been written.
struct CallState {
  // Who sent the call: its tenant (BearerAuth::Tenant: "tenant N", or "" when the server
  // has no tokens), set by the front end before the request is parsed. The owner of the
  // shared memory regions the call may name (regions()).
  std::string client;
  // The account its reservations count against (AccountOf), set with `client`; null:
  // none (the server-wide budget only).
  std::shared_ptr<ClientAccount> account;
  std::string op;      // "namespace::name[.overload]", as the client named it
  int model = -1;      // or the op's registry index, where the front end knows it (op unused)
  std::string device;  // "", "cpu", "cuda", "cuda:N" (ParseDeviceRequest)
  std::vector<NamedValue> args;
  OpCall call;
  BudgetReservation request_reservation;
  // What the op allocated on the CPU (OpCall::memory), held until that memory is freed.
  std::shared_ptr<CallCharge> charge;
  BudgetReservation result_reservation;  // the results beyond `charge`'s, once they exist
  int64_t received_bytes = 0;
  // How long the request waited for a worker to prepare it (Prepare), counted in its
  // Timing's queue_ns rather than decode_ns.
  int64_t prepare_wait_ns = 0;
  // The front end's own limit on the request, from its receipt (KServe's "timeout"
  // parameter), on top of the RPC's deadline; 0: none.
  int64_t timeout_us = 0;
  // Whether the front end sends results in pieces (CallStream's chunked results): they
  // may then exceed max_message_bytes, the memory budget still bounding them.
  bool chunked_results = false;
  // With chunked results: the data bytes per piece, and the memory each piece's message
  // holds besides them, reserved with the results (all pieces are built at once).
  int64_t result_piece_bytes = 0;
  int64_t result_piece_overhead_bytes = 0;
};

// Thread-safe; borrows `executor` and `shared_memory`, which must outlive it and every
// front end using it. Whatever serves metrics() must stop before it is destroyed.
// A call's OpCall::memory: each allocation its op makes on the CPU is reserved from the
// budget (and the call's account) while that memory lives. Thread-safe.
class CallCharge final : public MemoryCharge {
 public:
  CallCharge(Pipeline* pipeline, std::shared_ptr<ClientAccount> account)
      : pipeline_(pipeline), account_(std::move(account)) {}
  absl::Status Take(int64_t bytes) override;
  void Give(int64_t bytes) override;
  // The bytes of its allocations still alive.
  int64_t held() const { return held_.load(std::memory_order_acquire); }

 private:
  Pipeline* const pipeline_;  // outlives every charge (as the budget its reservations)
  const std::shared_ptr<ClientAccount> account_;
  std::atomic<int64_t> held_{0};
};

class Pipeline {
 public:
  // `shared_memory`: the registered regions requests may name; null when the server does
  // not accept shared memory.
  Pipeline(Executor* executor, const ServiceLimits& limits,
           SharedMemoryRegistry* shared_memory = nullptr);
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  // How a request ends: its final status and (on success) its timing. Called exactly once.
  using Done = std::function<void(absl::Status, const Timing&)>;

  // A call's steps, for every front end (the typed ScaleShift RPCs are sugar over a call).
  // First, before the request is parsed, reserves the memory budget for `bytes` received
  // bytes (as received and as parsed)...
  absl::Status ReserveCallRequest(int64_t bytes, CallState* state) {
    return ReserveCallRequest(bytes, 2 * bytes, state);
  }
  // (or `held` bytes for `bytes` received, where the front end's parsing holds more)...
  absl::Status ReserveCallRequest(int64_t bytes, int64_t held, CallState* state);
  // ...then, once the front end has filled op, device and args: resolves the op, admits,
  // binds the arguments, picks a device with a kernel and submits; on success also
  // reserves the result tensors' bytes. Calls `done` once, after the in-flight slot is
  // released; the budget stays reserved in `state` until its owner drops it. The timing
  // counts from `received` (when the front end got the request's bytes). Records the
  // request in model_stats() once the op is resolved.
  void ProcessCall(CallState* state, Clock::time_point received,
                   std::chrono::system_clock::time_point deadline,
                   std::function<bool()> is_cancelled, Done done);

  // Runs a front end's `prepare` of `state`'s request (its parse and decode, ending in
  // ProcessCall or a refusal) where Executor::Prepare says for `input_bytes` of tensor
  // contents: a large request's on a CPU worker. Reserve its budget first
  // (ReserveCallRequest): it may wait for a worker. The wait counts as queue time.
  void Prepare(int64_t input_bytes, CallState* state, std::function<void()> prepare) {
    executor_->Prepare(input_bytes, &state->prepare_wait_ns, std::move(prepare));
  }

  // Reserves `bytes` for what a front end holds beyond a request and its results (JSON
  // text, inputs copied out of shared memory, chunks of a request), counted against
  // `account` too (when given); RESOURCE_EXHAUSTED naming the limit (the budget, or the
  // client's share) when they cannot be held. Held in `out` until it is dropped.
  absl::Status ReserveWorkingMemory(int64_t bytes, BudgetReservation* out,
                                    const std::shared_ptr<ClientAccount>& account);

  // The account of a caller: its `tenant` where tokens are set (BearerAuth::Tenant), else
  // its `connection` (gRPC's peer, "ipv4:1.2.3.4:5678"; REST's address and port), so that
  // a client is one tenant, or one connection without tokens. Made on first use with
  // limits().max_client_share of the budget, and shared while any call or reservation of
  // the client holds it. Thread-safe.
  std::shared_ptr<ClientAccount> AccountOf(const std::string& tenant,
                                           const std::string& connection);

  const ServiceLimits& limits() const { return limits_; }
  // Null unless the server was started with --allow-shared-memory. Thread-safe.
  SharedMemoryRegistry* shared_memory() const { return shared_memory_; }
  // The regions `state`'s client may use (none when the server does not accept shared
  // memory).
  OwnedRegions regions(const CallState& state) const {
    return OwnedRegions(shared_memory_, state.client);
  }
  const Executor& executor() const { return *executor_; }
  // The served operators (model indices are its op indices).
  const OpRegistry& registry() const { return *executor_->info().registry; }

  // Request metrics (thread-safe): each front end adds its RPCs' series at start-up; the
  // pipeline's gauges (requests in flight, memory held and budget, open streams).
  Metrics& metrics() { return metrics_; }
  const Metrics& metrics() const { return metrics_; }
  int64_t inflight() const { return inflight_.current(); }
  const MemoryBudget& budget() const { return budget_; }
  MemoryBudget& budget() { return budget_; }

  // Per-model statistics (one model per op of the registry, by index), recorded for every
  // front end; thread-safe.
  const ModelStats& model_stats() const { return model_stats_; }
  // Records a request of op `model` (a registry index; -1: none) that a front end refused
  // after it knew the model and before ProcessCall took it, e.g. inputs that do not
  // decode; `received` as given to ProcessCall.
  void RecordModelFailure(int model, Clock::time_point received);
  // The registry index of myops::scale_shift; -1 when it is not served.
  int scale_shift_model() const { return scale_shift_model_; }

  // Streaming RPCs open at once (ServiceLimits::max_streams); thread-safe.
  bool TryOpenStream() { return streams_.TryAcquire(); }
  void CloseStream() { streams_.Release(); }

 private:
  // An in-flight slot (RESOURCE_EXHAUSTED when none is free; Release it once the job is
  // done).
  absl::Status Admit();
  void Release() { inflight_.Release(); }
  // The slot of a device for `device` with a kernel for `op`: the one device choice.
  absl::StatusOr<int> ResolveDevice(const OpInfo& op, absl::string_view device);
  // Records a finished request of op `model`: its stages from `timing` when `status` is
  // OK, else the time since `received`.
  void RecordModel(int model, const absl::Status& status, Clock::time_point received,
                   const Timing& timing);

  Executor* const executor_;
  const ServiceLimits limits_;
  SharedMemoryRegistry* const shared_memory_;
  InflightLimiter inflight_;
  MemoryBudget budget_;
  Metrics metrics_;
  ModelStats model_stats_;
  const int scale_shift_model_;
  InflightLimiter streams_;
  std::atomic<unsigned> round_robin_{0};
  absl::Mutex accounts_mu_;
  // The clients' accounts, while one is held; expired ones are swept as the map grows.
  std::unordered_map<std::string, std::weak_ptr<ClientAccount>> accounts_
      ABSL_GUARDED_BY(accounts_mu_);
  size_t accounts_sweep_at_ ABSL_GUARDED_BY(accounts_mu_) = 64;
};

}  // namespace myops::server
