// The myops.v1 front end's generic calls: Call, CallStream and ListOperators (see
// frontends/myops_v1/service.h). Requests go through the same admission, memory budget, deadlines
// and executor as ScaleShift; the op runs boxed (runtime/boxed_call.h).
#include <algorithm>
#include <chrono>
#include <vector>

#include "absl/strings/str_cat.h"
#include "frontends/grpc/arena_request.h"
#include "frontends/grpc/stream_reactor.h"
#include "frontends/grpc/unary_reactor.h"
#include "frontends/myops_v1/call_chunks.h"
#include "frontends/myops_v1/call_codec.h"
#include "frontends/myops_v1/service.h"
#include "myops/wire/call_wire.h"
#include "myops/wire/tensor_wire.h"
#include "util/clock.h"

namespace myops::server {
namespace {

// A myops.v1 call's state: the pipeline's, and the parsed request its views point into.
struct V1CallState : CallState {
  ArenaRequest<myops::v1::CallRequest> request;
  CallShm shm;  // regions its tensors are in (frontends/myops_v1/call_shm.h)
  std::vector<BudgetReservation> shm_copies;  // argument tensors copied out of regions
  ChunkedTensors chunks;        // its chunked tensors, assembled (frontends/myops_v1/call_chunks.h)
  uint64_t response_limit = 0;  // a larger stream response goes chunked; 0: never
};

// The unary Call's reactor: owns the call's state (and so its budget and result memory)
// until gRPC is done with the call, or its client has left the response untaken for the
// stall timeout.
using CallReactor = WatchedUnaryReactor<V1CallState>;

// Checks the request's head and reserves the budget for what its parse can take;
// returns the bytes of its tensor data (those beyond its head).
absl::StatusOr<int64_t> ReserveHead(Pipeline* pipeline, const grpc::ByteBuffer& bytes,
                                    V1CallState* state) {
  auto head = wire::CheckCallRequestHead(bytes);
  if (!head.ok()) return head.status();
  if (absl::Status reserved = pipeline->ReserveCallRequest(
          static_cast<int64_t>(bytes.Length()), CallParseReservation(bytes.Length(), *head), state);
      !reserved.ok()) {
    return reserved;
  }
  return static_cast<int64_t>(bytes.Length() - *head);
}

// Checks the request's head, reserves the budget for what its parse can take, and parses
// it.
absl::Status ParseHead(Pipeline* pipeline, const grpc::ByteBuffer& bytes, V1CallState* state) {
  if (auto reserved = ReserveHead(pipeline, bytes, state); !reserved.ok()) {
    return reserved.status();
  }
  return ParseCheckedCallRequest(bytes, state->request.get());
}

// Decodes a parsed request's arguments (views of `state`, which must not move after).
absl::Status DecodeCall(Pipeline* pipeline, V1CallState* state) {
  state->shm.regions = pipeline->regions(*state);
  state->shm.reserve = [pipeline, state](int64_t n) {
    return pipeline->ReserveWorkingMemory(n, &state->shm_copies.emplace_back(), state->account);
  };
  // Chunked tensors come on CallStream only, after a header (CallStreamKind::Receive).
  ChunkedTensors* chunks = state->chunks.tensors.empty() ? nullptr : &state->chunks;
  auto args = DecodeArguments(*state->request, pipeline->limits().tensor, &state->shm, chunks);
  if (!args.ok()) return args.status();
  state->shm.inline_unfit = state->request->inline_unfit_results();
  if (absl::Status regions = ResolveResultRegions(*state->request, &state->shm); !regions.ok()) {
    return regions;
  }
  state->call.result_buffer = ResultBuffer(state->shm);
  state->args = std::move(*args);
  state->op = state->request->op();
  state->device = state->request->device();
  return absl::OkStatus();
}

// A unary Call whose head is reserved: parses and decodes it, calls it, then answers.
void RunUnaryCall(Pipeline* pipeline, Metrics::Rpc* rpc, CallReactor* reactor) {
  V1CallState& state = reactor->state;
  absl::Status parsed = ParseCheckedCallRequest(*reactor->request, state.request.get());
  if (parsed.ok()) parsed = DecodeCall(pipeline, &state);
  if (!parsed.ok()) return reactor->Refuse(pipeline, rpc, parsed);
  reactor->Process(
      pipeline, &state, [pipeline, rpc, reactor](absl::Status status, const Timing& timing) {
        V1CallState& state = reactor->state;
        if (status.ok()) status = FinishRegions(state.call, state.shm);
        pipeline->metrics().Record(rpc, status, timing,
                                   static_cast<uint64_t>(state.call.input_bytes));
        if (status.ok()) {
          *reactor->response =
              EncodeCallResponse(state.call, timing, state.request->request_id(), &state.shm);
        }
        reactor->FinishWatched(ToGrpcStatus(status));
      });
}

// A stream request's choice of chunked results (CallRequest.max_response_message_bytes).
absl::Status TakeResponseLimit(const Pipeline& pipeline, V1CallState* state) {
  const uint64_t wanted = state->request->max_response_message_bytes();
  if (wanted == 0) return absl::OkStatus();
  if (wanted < kMinResponseMessageBytes) {
    return absl::InvalidArgumentError(absl::StrCat("max_response_message_bytes is ", wanted,
                                                   "; expected 0 (no chunked results) or at least ",
                                                   kMinResponseMessageBytes));
  }
  state->response_limit =
      std::min(wanted, static_cast<uint64_t>(pipeline.limits().max_message_bytes));
  state->chunked_results = true;
  // Every chunk message is built when the response is encoded: its memory besides the
  // data is reserved with the results (Pipeline::ProcessCall).
  state->result_piece_bytes = ResultChunkDataBytes(state->response_limit);
  state->result_piece_overhead_bytes = kResultChunkMessageBytes;
  return absl::OkStatus();
}

// CallStream's steps for StreamReactor, with chunked tensors (frontends/myops_v1/call_chunks.h).
struct CallStreamKind {
  using State = V1CallState;
  using Assembly = ChunkAssembly;
  static Assembly MakeAssembly(Pipeline* pipeline, const std::shared_ptr<ClientAccount>& account) {
    return ChunkAssembly(pipeline->limits().tensor,
                         [pipeline, account](int64_t n, BudgetReservation* out) {
                           return pipeline->ReserveWorkingMemory(n, out, account);
                         });
  }
  // One message: a request to answer (true; `status`: its parse), or a piece of one
  // that is not complete yet (false).
  static bool Receive(Pipeline* pipeline, const grpc::ByteBuffer& bytes, Assembly* assembly,
                      State* state, absl::Status* status) {
    if (IsChunkMessage(bytes)) {
      ChunkAssembly::Request done;
      uint64_t id = 0;
      switch (assembly->Add(bytes, &done, &id, status)) {
        case ChunkAssembly::Added::kConsumed:
          return false;
        case ChunkAssembly::Added::kFailed:
          state->request->set_request_id(id);
          return true;
        case ChunkAssembly::Added::kComplete:
          *state->request = std::move(done.request);
          state->request_reservation = std::move(done.header);
          state->received_bytes = done.received_bytes;
          state->chunks = std::move(done.chunks);
          *status = Decode(pipeline, state);
          return true;
      }
    }
    *status = ParseHead(pipeline, bytes, state);
    if (!status->ok()) {
      if (status->code() == absl::StatusCode::kResourceExhausted)
        Unreserved(bytes, assembly, state);
      return true;
    }
    auto sizes = FindChunkedTensors(*state->request, pipeline->limits().tensor);
    if (!sizes.ok()) {  // Refused; the chunks its client sends anyway are dropped.
      assembly->Refuse(state->request->request_id(), AnnouncedChunkedBytes(*state->request));
      *status = sizes.status();
      return true;
    }
    if (sizes->bytes.empty()) {
      *status = Decode(pipeline, state);
      return true;
    }
    const uint64_t id = state->request->request_id();
    ChunkAssembly::Request pending;
    pending.request = std::move(*state->request);  // copied out of the arena,
    state->request.Reset();                        // which lets go of its copy now
    pending.header = std::move(state->request_reservation);
    pending.received_bytes = state->received_bytes;
    *status = assembly->Start(std::move(pending), *sizes);
    if (status->ok()) return false;
    state->request->set_request_id(id);  // Only its error is answered.
    return true;
  }
  // A request the budget refused before it was parsed: when it is small (as a chunked
  // request's header is), parses it all the same (bounded: wire::kMaxHeadBytes) for its
  // id, which the error then carries, and drops the chunks it announced.
  static void Unreserved(const grpc::ByteBuffer& bytes, Assembly* assembly, State* state) {
    if (bytes.Length() > wire::kMaxHeadBytes) return;
    myops::v1::CallRequest head;
    if (!ParseCallRequest(bytes, &head).ok()) return;
    state->request->set_request_id(head.request_id());
    assembly->Refuse(head.request_id(), AnnouncedChunkedBytes(head));
  }
  // Once the client has closed its side: a request whose chunks did not all come.
  static int Unfinished(const Assembly& assembly) { return assembly.unfinished(); }
  static bool TakeUnfinished(Assembly* assembly, State* state, absl::Status* status) {
    uint64_t id = 0;
    if (!assembly->TakeUnfinished(&id, status)) return false;
    state->request->set_request_id(id);
    return true;
  }
  static absl::Status Decode(Pipeline* pipeline, State* state) {
    if (absl::Status limit = TakeResponseLimit(*pipeline, state); !limit.ok()) return limit;
    return DecodeCall(pipeline, state);
  }
  template <typename Done>
  static void Process(Pipeline* pipeline, State* state, Clock::time_point received,
                      std::chrono::system_clock::time_point deadline,
                      std::function<bool()> is_cancelled, Done done) {
    pipeline->ProcessCall(state, received, deadline, std::move(is_cancelled), std::move(done));
  }
  static absl::StatusOr<std::vector<grpc::ByteBuffer>> Encode(const State& state,
                                                              const Timing& timing) {
    if (absl::Status finished = FinishRegions(state.call, state.shm); !finished.ok()) {
      return finished;
    }
    const uint64_t id = state.request->request_id();
    std::vector<grpc::ByteBuffer> out;
    out.push_back(EncodeCallStreamResponse(state.call, timing, id, &state.shm));
    if (state.response_limit == 0 || out[0].Length() <= state.response_limit) return out;
    std::vector<TensorView> chunked;
    grpc::ByteBuffer head = EncodeCallStreamResponse(state.call, timing, id, &state.shm, &chunked);
    return EncodeResultChunks(std::move(head), id, chunked, state.response_limit);
  }
  static grpc::ByteBuffer EncodeError(const State& state, const absl::Status& status) {
    return EncodeStreamError(state.request->request_id(), status);
  }
  static uint64_t InputBytes(const State& state) {
    return static_cast<uint64_t>(state.call.input_bytes);
  }
};

}  // namespace

grpc::ServerUnaryReactor* MyopsService::Call(grpc::CallbackServerContext* context,
                                             const grpc::ByteBuffer* request,
                                             grpc::ByteBuffer* response) {
  auto client = auth_.Tenant(*context);
  if (!client.ok()) return RefuseUnary(context, ToGrpcStatus(client.status()));
  auto* reactor = new CallReactor(context, &watch_, request, response, Clock::now());
  V1CallState& state = reactor->state;
  state.client = *std::move(client);
  state.account = pipeline_->AccountOf(state.client, context->peer());
  auto data = ReserveHead(pipeline_, *request, &state);
  if (!data.ok()) {
    pipeline_->metrics().Record(call_rpc_, data.status(), {}, 0);
    reactor->Finish(ToGrpcStatus(data.status()));
    return reactor;
  }
  // A large request is parsed on a worker, while this thread reads on.
  pipeline_->Prepare(*data, &state,
                     [this, reactor] { RunUnaryCall(pipeline_, call_rpc_, reactor); });
  return reactor;
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* MyopsService::CallStream(
    grpc::CallbackServerContext* context) {
  auto client = auth_.Tenant(*context);
  if (!client.ok()) {
    return new RefusedStream<grpc::ByteBuffer, grpc::ByteBuffer>(ToGrpcStatus(client.status()));
  }
  return new StreamReactor<CallStreamKind>(pipeline_, call_stream_rpc_, context,
                                           *std::move(client));
}

grpc::ServerUnaryReactor* MyopsService::ListOperators(grpc::CallbackServerContext* context,
                                                      const myops::v1::ListOperatorsRequest*,
                                                      myops::v1::ListOperatorsResponse* response) {
  if (absl::Status denied = auth_.Check(*context); !denied.ok()) {
    return RefuseUnary(context, ToGrpcStatus(denied));
  }
  for (const OpInfo& op : pipeline_->registry().ops()) {
    DescribeOperator(op, pipeline_->executor().devices().devices(), response->add_operators());
  }
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace myops::server
