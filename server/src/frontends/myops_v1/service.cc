// The myops.v1.Myops service (see frontends/myops_v1/service.h).
#include "frontends/myops_v1/service.h"

#include <deque>
#include <memory>
#include <mutex>

#include <grpc/slice.h>

#include "absl/strings/str_cat.h"
#include "frontends/grpc/stream_reactor.h"
#include "myops/version.h"
#include "util/clock.h"

namespace myops::server {
namespace {

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

// ScaleShift's typed path through the pipeline: admits `state` (in-flight slot, then the
// memory budget for its input and output), validates it, allocates its output and submits
// it; calls `done` exactly once with the final status and (on success) the timing, which
// counts from `received` (when the handler got the request's bytes). The in-flight slot is
// released before `done`; the budget stays reserved in `state` until its owner drops it.
// Shared by both ScaleShift RPCs.
void ProcessScaleShift(Pipeline* pipeline, RequestState* state, Clock::time_point received,
                       std::chrono::system_clock::time_point deadline,
                       std::function<bool()> is_cancelled, Pipeline::Done given_done) {
  const auto start = received;
  Pipeline::Done done = [pipeline, start, given_done = std::move(given_done)](
                            absl::Status status, const Timing& timing) {
    pipeline->RecordModel(pipeline->scale_shift_model(), status, start, timing);
    given_done(std::move(status), timing);
  };
  if (absl::Status admitted = pipeline->Admit(); !admitted.ok()) {
    return done(std::move(admitted), {});
  }
  auto fail = [pipeline, &done](absl::Status status) {
    pipeline->Release();
    done(std::move(status), {});
  };
  const myops::v1::ScaleShiftRequest& request = state->request;
  if (!request.has_input()) {
    return fail(absl::InvalidArgumentError("the request has no 'input' tensor"));
  }
  auto input =
      DecodeTensorHead(request.input(), state->input.size(), "input", pipeline->limits().tensor);
  if (!input.ok()) return fail(input.status());
  auto slot = pipeline->ResolveDevice(nullptr, request.device());
  if (!slot.ok()) return fail(slot.status());
  // The memory held from here to the response's release: the input as received (twice
  // when it must be gathered from several slices or realigned) and the output.
  const int64_t received_bytes = static_cast<int64_t>(state->input.size());
  const int64_t item_size = ItemSize(input->dtype);
  const int64_t need = received_bytes * (state->MustGather(item_size) ? 2 : 1) + input->bytes;
  if (absl::Status reserved = pipeline->ReserveWorkingMemory(need, &state->reservation);
      !reserved.ok()) {
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
  pipeline->Submit(std::move(job), [pipeline, start, decode_ns, encode_ns, done = std::move(done)](
                                       absl::Status status, const JobTiming& t) {
    const Timing timing = status.ok() ? MakeTiming(start, decode_ns, encode_ns, t) : Timing();
    pipeline->Release();
    done(std::move(status), timing);
  });
}

// ScaleShiftStream's steps for StreamReactor.
struct ScaleShiftStreamKind : OneMessagePerRequest<ScaleShiftStreamKind> {
  using State = RequestState;
  static absl::Status Parse(Pipeline* pipeline, const grpc::ByteBuffer& bytes, State* state) {
    const auto received = Clock::now();
    // Bounded work and memory, whatever the bytes (wire::kMaxHeadBytes); the data stays
    // in the received slices.
    absl::Status parsed = ParseRequest(bytes, &state->request, &state->input);
    if (parsed.ok()) return parsed;
    pipeline->RecordModelFailure(pipeline->scale_shift_model(), received);
    return NotARequest(parsed);
  }
  template <typename Done>
  static void Process(Pipeline* pipeline, State* state, Clock::time_point received,
                      std::chrono::system_clock::time_point deadline,
                      std::function<bool()> is_cancelled, Done done) {
    ProcessScaleShift(pipeline, state, received, deadline, std::move(is_cancelled),
                      std::move(done));
  }
  static absl::StatusOr<grpc::ByteBuffer> Encode(const State& state, const Timing& timing) {
    return EncodeStreamResponse(state.request, state.output, timing);
  }
  static grpc::ByteBuffer EncodeError(const State& state, const absl::Status& status) {
    return EncodeStreamError(state.request.request_id(), status);
  }
  static uint64_t InputBytes(const State& state) { return state.input.size(); }
};

}  // namespace

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

MyopsService::MyopsService(Pipeline* pipeline, BearerAuth auth)
    : pipeline_(pipeline),
      auth_(std::move(auth)),
      scale_shift_rpc_(pipeline->metrics().AddRpc("ScaleShift")),
      scale_shift_stream_rpc_(pipeline->metrics().AddRpc("ScaleShiftStream")),
      call_rpc_(pipeline->metrics().AddRpc("Call")),
      call_stream_rpc_(pipeline->metrics().AddRpc("CallStream")) {}

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
    pipeline_->metrics().Record(scale_shift_rpc_, invalid, {}, 0);
    pipeline_->RecordModelFailure(pipeline_->scale_shift_model(), received);
    reactor->Finish(ToGrpcStatus(invalid));
    return reactor;
  }
  ProcessScaleShift(
      pipeline_, &state, received, context->deadline(),
      [context] { return context->IsCancelled(); },
      [this, reactor, response](absl::Status status, const Timing& timing) {
        RequestState& state = reactor->state;
        pipeline_->metrics().Record(scale_shift_rpc_, status, timing, state.input.size());
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
  return new StreamReactor<ScaleShiftStreamKind>(pipeline_, scale_shift_stream_rpc_, context);
}

grpc::ServerUnaryReactor* MyopsService::ServerInfo(grpc::CallbackServerContext* context,
                                                   const myops::v1::ServerInfoRequest*,
                                                   myops::v1::ServerInfoResponse* response) {
  if (absl::Status denied = auth_.Check(*context); !denied.ok()) {
    return RefuseUnary(context, ToGrpcStatus(denied));
  }
  const RuntimeInfo& info = pipeline_->executor().info();
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
  const ServiceLimits& served = pipeline_->limits();
  limits->set_max_message_bytes(served.max_message_bytes);
  limits->set_max_elements(served.tensor.max_elements);
  limits->set_max_inflight(served.max_inflight);
  limits->set_max_inflight_bytes(pipeline_->budget().limit());
  limits->set_max_streams(served.max_streams);
  response->set_workers(info.workers);
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace myops::server
