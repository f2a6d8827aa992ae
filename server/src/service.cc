// The myops.v1.Myops service (see service.h).
#include "service.h"

#include <deque>
#include <memory>
#include <mutex>

#include <grpc/slice.h>

#include "absl/strings/str_cat.h"
#include "clock.h"
#include "myops/version.h"
#include "stream_reactor.h"

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

absl::Status NotARequest(const absl::Status& parsed) {
  return absl::InvalidArgumentError(
      absl::StrCat("the request is not a valid myops.v1.ScaleShiftRequest: ", parsed.message()));
}

// The unary RPC's reactor: owns the request's state until gRPC is done with the call
// (OnDone, after the response was sent), so that the budget reservation covers the
// output slice until it is no longer held. Deletes itself in OnDone.
class UnaryReactor final : public grpc::ServerUnaryReactor {
 public:
  RequestState state;
  void OnDone() override { delete this; }
};

// ScaleShiftStream's steps for StreamReactor.
struct ScaleShiftStreamKind {
  using State = RequestState;
  static constexpr Metrics::Rpc kRpc = Metrics::Rpc::kScaleShiftStream;
  static absl::Status Parse(MyopsService* service, const grpc::ByteBuffer& bytes, State* state) {
    const auto received = Clock::now();
    // Bounded work and memory, whatever the bytes (wire::kMaxHeadBytes); the data stays
    // in the received slices.
    absl::Status parsed = ParseRequest(bytes, &state->request, &state->input);
    if (parsed.ok()) return parsed;
    service->RecordModelFailure(service->scale_shift_model(), received);
    return NotARequest(parsed);
  }
  template <typename Done>
  static void Process(MyopsService* service, State* state, Clock::time_point received,
                      std::chrono::system_clock::time_point deadline,
                      std::function<bool()> is_cancelled, Done done) {
    service->Process(state, received, deadline, std::move(is_cancelled), std::move(done));
  }
  static absl::StatusOr<grpc::ByteBuffer> Encode(const State& state,
                                                 const myops::v1::Timing& timing) {
    return EncodeStreamResponse(state.request, state.output, timing);
  }
  static uint64_t RequestId(const State& state) { return state.request.request_id(); }
  static uint64_t InputBytes(const State& state) { return state.input.size(); }
};

}  // namespace

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

bool RequestState::MustGather(int64_t alignment) const {
  const uint8_t* bytes = input.contiguous();
  return bytes == nullptr || reinterpret_cast<uintptr_t>(bytes) % alignment != 0;
}

const void* RequestState::ContiguousInput(int64_t alignment) {
  if (!MustGather(alignment)) return input.contiguous();
  // Never inline (grpc_slice_malloc keeps up to 23 bytes inside the grpc_slice, at an odd
  // offset): a heap block, aligned for any item size.
  gathered = grpc::Slice(grpc_slice_malloc_large(input.size()), grpc::Slice::STEAL_REF);
  uint8_t* out = const_cast<uint8_t*>(gathered.begin());  // Freshly allocated: ours.
  input.CopyTo(out);
  return out;
}

MyopsService::MyopsService(Executor* executor, const ServiceLimits& limits, BearerAuth auth,
                           SharedMemoryRegistry* shared_memory)
    : executor_(executor),
      limits_(limits),
      shared_memory_(shared_memory),
      auth_(std::move(auth)),
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
      .AddGauge("myops_open_streams", "ScaleShiftStream RPCs open now (limit: --max-streams).",
                [this] { return static_cast<double>(streams_.current()); })
      .IgnoreError();
}

void MyopsService::Process(RequestState* state, Clock::time_point received,
                           std::chrono::system_clock::time_point deadline,
                           std::function<bool()> is_cancelled, Done given_done) {
  const auto start = received;
  Done done = [this, start, given_done = std::move(given_done)](absl::Status status,
                                                                const myops::v1::Timing& timing) {
    RecordModel(scale_shift_model_, status, start, timing);
    given_done(std::move(status), timing);
  };
  if (absl::Status admitted = Admit(); !admitted.ok()) return done(std::move(admitted), {});
  auto fail = [this, &done](absl::Status status) {
    inflight_.Release();
    done(std::move(status), {});
  };
  const myops::v1::ScaleShiftRequest& request = state->request;
  if (!request.has_input()) {
    return fail(absl::InvalidArgumentError("the request has no 'input' tensor"));
  }
  auto input = DecodeTensorHead(request.input(), state->input.size(), "input", limits_.tensor);
  if (!input.ok()) return fail(input.status());
  auto wanted = ParseDeviceRequest(request.device());
  if (!wanted.ok()) return fail(wanted.status());
  auto slot = executor_->devices().Resolve(*wanted, round_robin_.fetch_add(1));
  if (!slot.ok()) return fail(slot.status());
  // The memory held from here to the response's release: the input as received (twice
  // when it must be gathered from several slices or realigned) and the output.
  const int64_t received_bytes = static_cast<int64_t>(state->input.size());
  const int64_t item_size = ItemSize(input->dtype);
  const int64_t need = received_bytes * (state->MustGather(item_size) ? 2 : 1) + input->bytes;
  if (absl::Status reserved = Reserve(need, &state->reservation); !reserved.ok()) {
    return fail(std::move(reserved));
  }
  input->data = state->ContiguousInput(item_size);
  const auto decoded = Clock::now();

  Job job;
  job.output = AllocateOutput(*input, &state->output);
  const int64_t encode_ns = Nanos(Clock::now() - decoded);
  job.input = std::move(*input);
  job.alpha = request.alpha();
  job.beta = request.beta();
  job.device_slot = *slot;
  job.deadline = ToSteady(deadline);
  job.is_cancelled = std::move(is_cancelled);
  const int64_t decode_ns = Nanos(decoded - start);
  executor_->Submit(std::move(job), [this, start, decode_ns, encode_ns, done = std::move(done)](
                                        absl::Status status, const JobTiming& t) {
    const myops::v1::Timing timing =
        status.ok() ? MakeTiming(start, decode_ns, encode_ns, t) : myops::v1::Timing();
    inflight_.Release();
    done(std::move(status), timing);
  });
}

absl::Status MyopsService::Admit() {
  if (inflight_.TryAcquire()) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      "the server is at its limit of ", inflight_.limit(), " requests in flight; retry later"));
}

myops::v1::Timing MakeTiming(Clock::time_point start, int64_t decode_ns, int64_t encode_ns,
                             const JobTiming& job) {
  myops::v1::Timing timing;
  timing.set_decode_ns(decode_ns);
  timing.set_queue_ns(job.queue_ns);
  timing.set_compute_ns(job.compute_ns);
  timing.set_encode_ns(encode_ns);
  timing.set_device(job.device);
  timing.set_total_ns(Nanos(Clock::now() - start));
  return timing;
}

absl::Status MyopsService::Reserve(int64_t need, BudgetReservation* out) {
  if (budget_.TryReserve(need, out)) return absl::OkStatus();
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

void MyopsService::RecordModel(int model, const absl::Status& status, Clock::time_point received,
                               const myops::v1::Timing& timing) {
  if (!status.ok()) return RecordModelFailure(model, received);
  RequestStages stages;
  stages.decode_ns = timing.decode_ns();
  stages.queue_ns = timing.queue_ns();
  stages.compute_ns = timing.compute_ns();
  stages.encode_ns = timing.encode_ns();
  stages.total_ns = timing.total_ns();
  model_stats_.RecordSuccess(model, stages, UnixMillisNow());
}

void MyopsService::RecordModelFailure(int model, Clock::time_point received) {
  model_stats_.RecordFailure(model, Nanos(Clock::now() - received), UnixMillisNow());
}

bool MyopsService::TryOpenStream() { return streams_.TryAcquire(); }

grpc::ServerUnaryReactor* MyopsService::ScaleShift(grpc::CallbackServerContext* context,
                                                   const grpc::ByteBuffer* request,
                                                   grpc::ByteBuffer* response) {
  if (absl::Status denied = auth_.Check(*context); !denied.ok()) {
    return RefuseUnary(context, ToGrpcStatus(denied));
  }
  const auto received = Clock::now();  // decode_ns includes parsing and gathering.
  auto* reactor = new UnaryReactor();
  RequestState& state = reactor->state;
  if (absl::Status parsed = ParseRequest(*request, &state.request, &state.input); !parsed.ok()) {
    const absl::Status invalid = NotARequest(parsed);
    metrics_.Record(Metrics::Rpc::kScaleShift, invalid, {}, 0);
    RecordModelFailure(scale_shift_model_, received);
    reactor->Finish(ToGrpcStatus(invalid));
    return reactor;
  }
  Process(
      &state, received, context->deadline(), [context] { return context->IsCancelled(); },
      [this, reactor, response](absl::Status status, const myops::v1::Timing& timing) {
        RequestState& state = reactor->state;
        metrics_.Record(Metrics::Rpc::kScaleShift, status, timing, state.input.size());
        if (status.ok()) *response = EncodeResponse(state.request, state.output, timing);
        reactor->Finish(ToGrpcStatus(status));
      });
  return reactor;
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* MyopsService::ScaleShiftStream(
    grpc::CallbackServerContext* context) {
  if (absl::Status denied = auth_.Check(*context); !denied.ok()) {
    return new RefusedStream<grpc::ByteBuffer, grpc::ByteBuffer>(ToGrpcStatus(denied));
  }
  return new StreamReactor<ScaleShiftStreamKind>(this, context, TryOpenStream());
}

grpc::ServerUnaryReactor* MyopsService::ServerInfo(grpc::CallbackServerContext* context,
                                                   const myops::v1::ServerInfoRequest*,
                                                   myops::v1::ServerInfoResponse* response) {
  if (absl::Status denied = auth_.Check(*context); !denied.ok()) {
    return RefuseUnary(context, ToGrpcStatus(denied));
  }
  const RuntimeInfo& info = executor_->info();
  response->set_myops_version(MYOPS_VERSION_STRING);
  response->set_torch_version(info.torch_version);
  response->set_cuda_version(info.cuda_version);
  for (const auto& d : info.devices) {
    auto* device = response->add_devices();
    device->set_name(d.name);
    device->set_description(d.description);
    device->set_total_memory_bytes(d.total_memory_bytes);
  }
  for (const OpInfo& op : info.registry->ops()) {
    if (!op.served) continue;
    auto* listed = response->add_operators();
    listed->set_name(op.QualifiedName());
    listed->set_schema(op.schema);
  }
  auto* limits = response->mutable_limits();
  limits->set_max_message_bytes(limits_.max_message_bytes);
  limits->set_max_elements(limits_.tensor.max_elements);
  limits->set_max_inflight(limits_.max_inflight);
  limits->set_max_inflight_bytes(budget_.limit());
  limits->set_max_streams(limits_.max_streams);
  response->set_workers(info.workers);
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace myops::server
