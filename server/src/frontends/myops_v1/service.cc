// The myops.v1.Myops service (see frontends/myops_v1/service.h).
#include "frontends/myops_v1/service.h"

#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "frontends/grpc/stream_reactor.h"
#include "frontends/grpc/unary_reactor.h"
#include "frontends/myops_v1/codec.h"
#include "frontends/myops_v1/scale_shift.h"
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
// output slice until it is no longer held; a response left untaken for the stall timeout
// cancels the call.
using UnaryReactor = WatchedUnaryReactor<ScaleShiftState>;

// A ScaleShift request through the pipeline, as the generic call it is sugar for, in two
// steps. First checks `state`'s input and reserves the memory budget for its input and
// output (a refusal counts as a failure of scale_shift from `received`).
absl::Status ReserveScaleShift(Pipeline* pipeline, ScaleShiftState* state,
                               Clock::time_point received) {
  absl::StatusOr<int64_t> held = CheckScaleShift(pipeline->limits().tensor, state);
  absl::Status reserved = held.status();
  if (reserved.ok()) {
    reserved =
        pipeline->ReserveCallRequest(static_cast<int64_t>(state->input.size()), *held, state);
  }
  if (!reserved.ok()) pipeline->RecordModelFailure(pipeline->scale_shift_model(), received);
  return reserved;
}

// Then binds the call (gathering the input when it must) and hands it to
// Pipeline::ProcessCall; calls `done` exactly once with the final status and (on success)
// the timing, which counts from `received` (when the handler got the request's bytes),
// the output's slice then holding the result. The budget stays reserved in `state` until
// its owner drops it.
void RunScaleShift(Pipeline* pipeline, ScaleShiftState* state, Clock::time_point received,
                   std::chrono::system_clock::time_point deadline,
                   std::function<bool()> is_cancelled, Pipeline::Done done) {
  BindScaleShift(pipeline->scale_shift_model(), state);
  pipeline->ProcessCall(state, received, deadline, std::move(is_cancelled),
                        [state, done = std::move(done)](absl::Status status, const Timing& timing) {
                          if (status.ok()) status = TakeScaleShiftResult(state);
                          done(std::move(status), timing);
                        });
}

// Both steps at once (ScaleShiftStream).
void ProcessScaleShift(Pipeline* pipeline, ScaleShiftState* state, Clock::time_point received,
                       std::chrono::system_clock::time_point deadline,
                       std::function<bool()> is_cancelled, Pipeline::Done done) {
  if (absl::Status reserved = ReserveScaleShift(pipeline, state, received); !reserved.ok()) {
    return done(std::move(reserved), {});
  }
  RunScaleShift(pipeline, state, received, deadline, std::move(is_cancelled), std::move(done));
}

// The unary ScaleShift, reserved: the rest of its steps, then its response.
void RunUnaryScaleShift(Pipeline* pipeline, Metrics::Rpc* rpc, UnaryReactor* reactor) {
  grpc::CallbackServerContext* context = reactor->context();
  RunScaleShift(
      pipeline, &reactor->state, reactor->received, context->deadline(),
      [context] { return context->IsCancelled(); },
      [pipeline, rpc, reactor](absl::Status status, const Timing& timing) {
        ScaleShiftState& state = reactor->state;
        pipeline->metrics().Record(rpc, status, timing, state.input.size());
        if (status.ok()) *reactor->response = EncodeResponse(state.request, state.output, timing);
        reactor->FinishWatched(ToGrpcStatus(status));
      });
}

// ScaleShiftStream's steps for StreamReactor.
struct ScaleShiftStreamKind : OneMessagePerRequest<ScaleShiftStreamKind> {
  using State = ScaleShiftState;
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

MyopsService::MyopsService(Pipeline* pipeline, BearerAuth auth)
    : pipeline_(pipeline),
      auth_(std::move(auth)),
      scale_shift_rpc_(pipeline->metrics().AddRpc("ScaleShift")),
      scale_shift_stream_rpc_(pipeline->metrics().AddRpc("ScaleShiftStream")),
      call_rpc_(pipeline->metrics().AddRpc("Call")),
      call_stream_rpc_(pipeline->metrics().AddRpc("CallStream")),
      watch_(MakeResponseWatch(pipeline)) {}

grpc::ServerUnaryReactor* MyopsService::ScaleShift(grpc::CallbackServerContext* context,
                                                   const grpc::ByteBuffer* request,
                                                   grpc::ByteBuffer* response) {
  auto client = auth_.Tenant(*context);
  if (!client.ok()) return RefuseUnary(context, ToGrpcStatus(client.status()));
  // decode_ns includes parsing and gathering.
  auto* reactor = new UnaryReactor(context, &watch_, request, response, Clock::now());
  ScaleShiftState& state = reactor->state;
  state.client = *std::move(client);
  state.account = pipeline_->AccountOf(state.client, context->peer());
  if (absl::Status parsed = ParseRequest(*request, &state.request, &state.input); !parsed.ok()) {
    const absl::Status invalid = NotARequest(parsed);
    pipeline_->metrics().Record(scale_shift_rpc_, invalid, {}, 0);
    pipeline_->RecordModelFailure(pipeline_->scale_shift_model(), reactor->received);
    reactor->Finish(ToGrpcStatus(invalid));
    return reactor;
  }
  if (absl::Status reserved = ReserveScaleShift(pipeline_, &state, reactor->received);
      !reserved.ok()) {
    pipeline_->metrics().Record(scale_shift_rpc_, reserved, {}, state.input.size());
    reactor->Finish(ToGrpcStatus(reserved));
    return reactor;
  }
  // A large input is gathered and computed on a worker, while this thread reads on.
  pipeline_->Prepare(static_cast<int64_t>(state.input.size()), &state,
                     [this, reactor] { RunUnaryScaleShift(pipeline_, scale_shift_rpc_, reactor); });
  return reactor;
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* MyopsService::ScaleShiftStream(
    grpc::CallbackServerContext* context) {
  auto client = auth_.Tenant(*context);
  if (!client.ok()) {
    return new RefusedStream<grpc::ByteBuffer, grpc::ByteBuffer>(ToGrpcStatus(client.status()));
  }
  return new StreamReactor<ScaleShiftStreamKind>(pipeline_, scale_shift_stream_rpc_, context,
                                                 *std::move(client));
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
