// The pipeline (see pipeline.h): admission, the memory budget, deadlines, the device
// choice and the executor's submission for every front end.
#include "pipeline/pipeline.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "util/heap.h"

namespace myops::server {
namespace {

// The number of ops in `registry` (executors made for tests may have none).
int Models(const OpRegistry* registry) {
  return registry == nullptr ? 0 : static_cast<int>(registry->ops().size());
}

// The registry index of myops::scale_shift, -1 when it is not served.
int ScaleShiftModel(const OpRegistry* registry) {
  if (registry == nullptr) return -1;
  auto index = registry->Find("myops::scale_shift");
  return index.ok() ? *index : -1;
}

// The slot of a device that serves `wanted` and has a kernel for `op`; FAILED_PRECONDITION
// naming the devices that would work.
absl::StatusOr<int> ResolveFor(const OpInfo& op, const DeviceSet& devices,
                               const DeviceRequest& wanted, unsigned hint) {
  auto has_kernel = [&op](const Device& d) {
    return d.kind == DeviceKind::kCpu ? op.cpu : op.cuda;
  };
  // Only a refusal needs the names of the devices that would work.
  auto alternatives = [&] {
    std::vector<std::string> working;
    for (const Device& d : devices.devices()) {
      if (has_kernel(d)) working.push_back(d.Name());
    }
    return working.empty() ? "none of this server's devices (" + devices.Names() + ") has one"
                           : "it runs on " + absl::StrJoin(working, ", ");
  };
  if (wanted.any_kind) {
    for (size_t i = 0; i < devices.devices().size(); ++i) {
      if (has_kernel(devices.devices()[i])) return static_cast<int>(i);
    }
    return absl::FailedPreconditionError(
        absl::StrCat("operator ", op.QualifiedName(), " has no kernel here: ", alternatives()));
  }
  auto slot = devices.Resolve(wanted, hint);
  if (!slot.ok()) return slot.status();
  const Device& chosen = devices.devices()[static_cast<size_t>(*slot)];
  if (!has_kernel(chosen)) {
    return absl::FailedPreconditionError(absl::StrCat("operator ", op.QualifiedName(),
                                                      " has no kernel for ", chosen.Name(), "; ",
                                                      alternatives()));
  }
  return slot;
}

// Bytes of result tensors (what a response holds beyond its small fields), and, for
// results sent in pieces, what each piece's message holds besides its data.
int64_t ResultBytes(const CallState& state) {
  const OpCall& call = state.call;
  int64_t n = 0;
  auto add = [&state, &n](int64_t bytes) {
    n += bytes;
    if (state.chunked_results && state.result_piece_bytes > 0) {
      n += (bytes + state.result_piece_bytes - 1) / state.result_piece_bytes *
           state.result_piece_overhead_bytes;
    }
  };
  for (const Value& v : call.results) {
    // A result computed into the front end's buffer (OpCall::result_buffer) is the front
    // end's to count: a client's region holds no memory of the server's and travels in no
    // message; ScaleShift's response slice was reserved with its request.
    if (v.tensor.data == nullptr || v.tensor.data != call.result_buffer.data) add(v.tensor.bytes);
    for (const TensorView& t : v.tensor_list) add(t.bytes);
  }
  return n;
}

}  // namespace

Pipeline::Pipeline(Executor* executor, const ServiceLimits& limits,
                   SharedMemoryRegistry* shared_memory)
    : executor_(executor),
      limits_(limits),
      shared_memory_(shared_memory),
      inflight_(limits.max_inflight),
      budget_(limits.max_inflight_bytes > 0 ? limits.max_inflight_bytes
                                            : DefaultMemoryBudgetBytes()),
      metrics_(Models(executor->info().registry.get())),
      model_stats_(Models(executor->info().registry.get())),
      scale_shift_model_(ScaleShiftModel(executor->info().registry.get())),
      streams_(limits.max_streams) {
  // Cannot fail: a valid name, new to this Metrics.
  metrics_
      .AddGauge("myops_inflight_requests",
                "Requests admitted and not yet finished (limit: --max-inflight).",
                [this] { return static_cast<double>(inflight_.current()); })
      .IgnoreError();
  metrics_
      .AddGauge("myops_memory_held_bytes",
                "Bytes held for requests now: inputs, outputs, unsent stream responses.",
                [this] { return static_cast<double>(budget_.held()); })
      .IgnoreError();
  metrics_
      .AddGauge("myops_memory_budget_bytes", "The memory budget (--max-inflight-bytes).",
                [this] { return static_cast<double>(budget_.limit()); })
      .IgnoreError();
  metrics_
      .AddGauge("myops_open_streams", "Streaming RPCs open now (limit: --max-streams).",
                [this] { return static_cast<double>(streams_.current()); })
      .IgnoreError();
  if (HeapInUseBytes().has_value()) {  // Not under a sanitizer's allocator.
    metrics_
        .AddGauge("myops_heap_in_use_bytes",
                  "Bytes the server's allocations hold now, the allocator's caches not counted "
                  "(what a leak grows; RSS also holds those caches).",
                  [] { return static_cast<double>(HeapInUseBytes().value_or(0)); })
        .IgnoreError();
  }
}

absl::Status Pipeline::Admit() {
  if (inflight_.TryAcquire()) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      "the server is at its limit of ", inflight_.limit(), " requests in flight; retry later"));
}

absl::StatusOr<int> Pipeline::ResolveDevice(const OpInfo& op, absl::string_view device) {
  auto wanted = ParseDeviceRequest(device);
  if (!wanted.ok()) return wanted.status();
  return ResolveFor(op, executor_->devices(), *wanted, round_robin_.fetch_add(1));
}

std::shared_ptr<ClientAccount> Pipeline::AccountOf(const std::string& tenant,
                                                   const std::string& connection) {
  const std::string name = tenant.empty() ? "connection " + connection : tenant;
  absl::MutexLock lock(&accounts_mu_);
  std::weak_ptr<ClientAccount>& slot = accounts_[name];
  std::shared_ptr<ClientAccount> account = slot.lock();
  if (account == nullptr) {
    const double share = std::clamp(limits_.max_client_share, 0.0, 1.0);
    account = std::make_shared<ClientAccount>(
        name, std::max<int64_t>(1, static_cast<int64_t>(share * budget_.limit())));
    slot = account;
    if (accounts_.size() >= accounts_sweep_at_) {  // amortized: the map stays O(clients held)
      for (auto it = accounts_.begin(); it != accounts_.end();) {
        it = it->second.expired() ? accounts_.erase(it) : std::next(it);
      }
      accounts_sweep_at_ = std::max<size_t>(64, 2 * accounts_.size());
    }
  }
  return account;
}

absl::Status CallCharge::Take(int64_t bytes) {
  BudgetReservation reserved;
  if (absl::Status s = pipeline_->ReserveWorkingMemory(bytes, &reserved, account_); !s.ok()) {
    return s;
  }
  reserved.Keep();  // returned by Give when the memory is freed
  held_.fetch_add(bytes, std::memory_order_acq_rel);
  return absl::OkStatus();
}

void CallCharge::Give(int64_t bytes) {
  held_.fetch_sub(bytes, std::memory_order_acq_rel);
  pipeline_->budget().Give(bytes, account_.get());
}

absl::Status Pipeline::ReserveWorkingMemory(int64_t need, BudgetReservation* out,
                                            const std::shared_ptr<ClientAccount>& account) {
  if (budget_.TryReserve(need, out, account)) return absl::OkStatus();
  if (account != nullptr && need > account->limit() && need <= budget_.limit()) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the request needs ", need,
                     " bytes of server memory (input and output), more than one "
                     "client's share of ",
                     account->limit(), " bytes (--max-client-share ", limits_.max_client_share,
                     " of the ", budget_.limit(), "-byte budget); send smaller tensors"));
  }
  if (account != nullptr && need > account->limit() - account->held() &&
      need <= budget_.limit() - budget_.held()) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "this client holds ", account->held(), " bytes of server memory, and this request needs ",
        need, " more: over its share of ", account->limit(), " bytes (--max-client-share ",
        limits_.max_client_share, " of the ", budget_.limit(),
        "-byte budget, so that no client can take it all); retry once its other calls are "
        "answered, or send smaller tensors"));
  }
  if (need > budget_.limit()) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the request needs ", need,
                     " bytes of server memory (input and output), more than "
                     "the server's whole memory budget of ",
                     budget_.limit(), " bytes (--max-inflight-bytes); send smaller tensors"));
  }
  return absl::ResourceExhaustedError(absl::StrCat(
      "the server's memory budget is in use (", budget_.held(), " of ", budget_.limit(),
      " bytes held); this request needs ", need, " more; retry later"));
}

absl::Status Pipeline::ReserveCallRequest(int64_t bytes, int64_t held, CallState* state) {
  state->received_bytes = bytes;
  return ReserveWorkingMemory(held, &state->request_reservation, state->account);
}

void Pipeline::ProcessCall(CallState* state, Clock::time_point received,
                           std::chrono::system_clock::time_point deadline,
                           std::function<bool()> is_cancelled, Done given_done) {
  const auto start = received;
  const OpRegistry& registry = this->registry();
  const bool known = state->model >= 0 && state->model < static_cast<int>(registry.ops().size());
  auto index = known ? absl::StatusOr<int>(state->model) : registry.Find(state->op);
  if (!index.ok()) {
    // Counted under no operator: only the registry's names become label values, never a
    // client's string.
    metrics_.RecordOperator(-1, "", index.status());
    return given_done(index.status(), {});
  }
  const OpInfo& op = registry.ops()[static_cast<size_t>(*index)];
  const int model = *index;
  const std::string& name = registry.Name(model);
  Done done = [this, &name, model, start, given_done = std::move(given_done)](
                  absl::Status status, const Timing& timing) {
    metrics_.RecordOperator(model, name, status);
    RecordModel(model, status, start, timing);
    given_done(std::move(status), timing);
  };
  if (absl::Status admitted = Admit(); !admitted.ok()) return done(std::move(admitted), {});
  auto fail = [this, &done](absl::Status status) {
    Release();
    done(std::move(status), {});
  };
  state->call.op = model;
  if (absl::Status bound = BindArguments(op, std::move(state->args), &state->call); !bound.ok()) {
    return fail(std::move(bound));
  }
  auto slot = ResolveDevice(op, state->device);
  if (!slot.ok()) return fail(slot.status());

  Job job;
  job.call = &state->call;
  job.device_slot = *slot;
  job.deadline = ToSteady(deadline);
  // A front end's timeout, from receipt; one beyond the clock's range is no bound (and
  // must not overflow it: the value is the client's).
  if (const std::chrono::microseconds timeout(state->timeout_us);
      timeout.count() > 0 && timeout < std::chrono::duration_cast<std::chrono::microseconds>(
                                           Clock::time_point::max() - received)) {
    job.deadline = std::min(job.deadline, received + timeout);
  }
  job.is_cancelled = std::move(is_cancelled);
  // What the op allocates is budgeted before it is taken: an op that asks for more than
  // the budget (or the client's share) grants fails without allocating it.
  state->charge = std::make_shared<CallCharge>(this, state->account);
  state->call.memory = state->charge;
  const int64_t decode_ns = Nanos(Clock::now() - start) - state->prepare_wait_ns;
  executor_->Submit(std::move(job), [this, state, start, decode_ns, &op, done = std::move(done)](
                                        absl::Status status, const JobTiming& t) {
    const auto computed = Clock::now();
    if (status.ok()) {
      // Results exist by now (the op allocated them); they are held from here until sent.
      const int64_t result_bytes = ResultBytes(*state);
      if (result_bytes > limits_.max_message_bytes && !state->chunked_results) {
        status = absl::ResourceExhaustedError(
            absl::StrCat("the results of ", op.QualifiedName(), " take ", result_bytes,
                         " bytes, more than the largest message this server sends (",
                         limits_.max_message_bytes, " bytes, --max-message-bytes)"));
      } else if (const int64_t rest = result_bytes - state->charge->held(); rest > 0) {
        status = ReserveWorkingMemory(rest, &state->result_reservation, state->account);
      }
      if (!status.ok()) {
        state->call.results.clear();  // and with them their memory
      }
    }
    Timing timing =
        status.ok() ? MakeTiming(start, decode_ns, Nanos(Clock::now() - computed), t) : Timing();
    if (status.ok()) timing.queue_ns += state->prepare_wait_ns;
    Release();
    done(std::move(status), timing);
  });
}

void Pipeline::RecordModel(int model, const absl::Status& status, Clock::time_point received,
                           const Timing& timing) {
  if (!status.ok()) return RecordModelFailure(model, received);
  RequestStages stages;
  stages.decode_ns = timing.decode_ns;
  stages.queue_ns = timing.queue_ns;
  stages.compute_ns = timing.compute_ns;
  stages.encode_ns = timing.encode_ns;
  stages.total_ns = timing.total_ns;
  model_stats_.RecordSuccess(model, stages, UnixMillisNow());
}

void Pipeline::RecordModelFailure(int model, Clock::time_point received) {
  model_stats_.RecordFailure(model, Nanos(Clock::now() - received), UnixMillisNow());
}

}  // namespace myops::server
