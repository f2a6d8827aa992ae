// The myops.v1 front end's generic calls: Call, CallStream and ListOperators (see
// service.h). Requests go through the same admission, memory budget, deadlines and
// executor as ScaleShift; the op runs boxed (runtime/boxed_call.h).
#include <algorithm>
#include <chrono>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "arena_request.h"
#include "call_chunks.h"
#include "call_codec.h"
#include "clock.h"
#include "myops/wire/tensor_wire.h"
#include "service.h"
#include "stream_reactor.h"

namespace myops::server {
namespace {

// A myops.v1 call's state: the pipeline's, and the parsed request its views point into.
struct V1CallState : CallState {
  ArenaRequest<myops::v1::CallRequest> request;
  CallShm shm;                                // regions its tensors are in (call_shm.h)
  std::vector<BudgetReservation> shm_copies;  // argument tensors copied out of regions
  ChunkedTensors chunks;                      // its chunked tensors, assembled (call_chunks.h)
  uint64_t response_limit = 0;                // a larger stream response goes chunked; 0: never
};

// The unary Call's reactor: owns the call's state (and so its budget and result memory)
// until gRPC is done with the call. Deletes itself in OnDone.
class CallReactor final : public grpc::ServerUnaryReactor {
 public:
  V1CallState state;
  void OnDone() override { delete this; }
};

// Reserves the budget for a request of `bytes` and parses it.
absl::Status ParseHead(MyopsService* service, const grpc::ByteBuffer& bytes, V1CallState* state) {
  if (absl::Status reserved =
          service->ReserveCallRequest(static_cast<int64_t>(bytes.Length()), state);
      !reserved.ok()) {
    return reserved;
  }
  return ParseCallRequest(bytes, state->request.get());
}

// Decodes a parsed request's arguments (views of `state`, which must not move after).
absl::Status DecodeCall(MyopsService* service, V1CallState* state) {
  state->shm.registry = service->shared_memory();
  state->shm.reserve = [service, state](int64_t n) {
    return service->ReserveWorkingMemory(n, &state->shm_copies.emplace_back());
  };
  // Chunked tensors come on CallStream only, after a header (CallStreamKind::Receive).
  ChunkedTensors* chunks = state->chunks.tensors.empty() ? nullptr : &state->chunks;
  auto args = DecodeArguments(*state->request, service->limits().tensor, &state->shm, chunks);
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

// Parses and decodes a unary Call's request.
absl::Status Parse(MyopsService* service, const grpc::ByteBuffer& bytes, V1CallState* state) {
  if (absl::Status parsed = ParseHead(service, bytes, state); !parsed.ok()) return parsed;
  return DecodeCall(service, state);
}

// A stream request's choice of chunked results (CallRequest.max_response_message_bytes).
absl::Status TakeResponseLimit(const MyopsService& service, V1CallState* state) {
  const uint64_t wanted = state->request->max_response_message_bytes();
  if (wanted == 0) return absl::OkStatus();
  if (wanted < kMinResponseMessageBytes) {
    return absl::InvalidArgumentError(absl::StrCat("max_response_message_bytes is ", wanted,
                                                   "; expected 0 (no chunked results) or at least ",
                                                   kMinResponseMessageBytes));
  }
  state->response_limit =
      std::min(wanted, static_cast<uint64_t>(service.limits().max_message_bytes));
  state->chunked_results = true;
  return absl::OkStatus();
}

// CallStream's steps for StreamReactor, with chunked tensors (call_chunks.h).
struct CallStreamKind {
  using State = V1CallState;
  using Assembly = ChunkAssembly;
  static constexpr Metrics::Rpc kRpc = Metrics::Rpc::kCallStream;
  static Assembly MakeAssembly(MyopsService* service) {
    return ChunkAssembly(service->limits().tensor, [service](int64_t n, BudgetReservation* out) {
      return service->ReserveWorkingMemory(n, out);
    });
  }
  // One message: a request to answer (true; `status`: its parse), or a piece of one
  // that is not complete yet (false).
  static bool Receive(MyopsService* service, const grpc::ByteBuffer& bytes, Assembly* assembly,
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
          *status = Decode(service, state);
          return true;
      }
    }
    *status = ParseHead(service, bytes, state);
    if (!status->ok()) {
      if (status->code() == absl::StatusCode::kResourceExhausted)
        Unreserved(bytes, assembly, state);
      return true;
    }
    auto sizes = FindChunkedTensors(*state->request, service->limits().tensor);
    if (!sizes.ok()) {  // Refused; the chunks its client sends anyway are dropped.
      assembly->Refuse(state->request->request_id(), AnnouncedChunkedBytes(*state->request));
      *status = sizes.status();
      return true;
    }
    if (sizes->bytes.empty()) {
      *status = Decode(service, state);
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
  static bool TakeUnfinished(Assembly* assembly, State* state, absl::Status* status) {
    uint64_t id = 0;
    if (!assembly->TakeUnfinished(&id, status)) return false;
    state->request->set_request_id(id);
    return true;
  }
  static absl::Status Decode(MyopsService* service, State* state) {
    if (absl::Status limit = TakeResponseLimit(*service, state); !limit.ok()) return limit;
    return DecodeCall(service, state);
  }
  template <typename Done>
  static void Process(MyopsService* service, State* state, Clock::time_point received,
                      std::chrono::system_clock::time_point deadline,
                      std::function<bool()> is_cancelled, Done done) {
    service->ProcessCall(state, received, deadline, std::move(is_cancelled), std::move(done));
  }
  static absl::StatusOr<std::vector<grpc::ByteBuffer>> Encode(const State& state,
                                                              const myops::v1::Timing& timing) {
    if (absl::Status finished = FinishRegions(state.call, state.shm); !finished.ok()) {
      return finished;
    }
    const uint64_t id = state.request->request_id();
    std::vector<grpc::ByteBuffer> out;
    out.push_back(EncodeCallStreamResponse(state.call, timing, id, &state.shm));
    if (state.response_limit == 0 || out[0].Length() <= state.response_limit) return out;
    std::vector<ChunkedResult> chunked;
    grpc::ByteBuffer head = EncodeCallStreamResponse(state.call, timing, id, &state.shm, &chunked);
    return EncodeResultChunks(std::move(head), id, chunked, state.response_limit);
  }
  static uint64_t RequestId(const State& state) { return state.request->request_id(); }
  static uint64_t InputBytes(const State& state) {
    return static_cast<uint64_t>(state.call.input_bytes);
  }
};

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

}  // namespace

absl::Status MyopsService::ReserveCallRequest(int64_t bytes, int64_t held, CallState* state) {
  state->received_bytes = bytes;
  return Reserve(held, &state->request_reservation);
}

void MyopsService::ProcessCall(CallState* state, Clock::time_point received,
                               std::chrono::system_clock::time_point deadline,
                               std::function<bool()> is_cancelled, Done given_done) {
  const auto start = received;
  const OpRegistry& registry = *executor_->info().registry;
  auto index = registry.Find(state->op);
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
                  absl::Status status, const myops::v1::Timing& timing) {
    metrics_.RecordOperator(model, name, status);
    RecordModel(model, status, start, timing);
    given_done(std::move(status), timing);
  };
  if (absl::Status admitted = Admit(); !admitted.ok()) return done(std::move(admitted), {});
  auto fail = [this, &done](absl::Status status) {
    inflight_.Release();
    done(std::move(status), {});
  };
  state->call.op = model;
  if (absl::Status bound = BindArguments(op, std::move(state->args), &state->call); !bound.ok()) {
    return fail(std::move(bound));
  }
  auto wanted = ParseDeviceRequest(state->device);
  if (!wanted.ok()) return fail(wanted.status());
  auto slot = ResolveFor(op, executor_->devices(), *wanted, round_robin_.fetch_add(1));
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
  const int64_t decode_ns = Nanos(Clock::now() - start);
  executor_->Submit(std::move(job), [this, state, start, decode_ns, &op, done = std::move(done)](
                                        absl::Status status, const JobTiming& t) {
    const auto computed = Clock::now();
    if (status.ok()) {
      // Results exist by now (the op allocated them); they are held from here until sent.
      const int64_t result_bytes = ResultBytes(state->call);
      if (result_bytes > limits_.max_message_bytes && !state->chunked_results) {
        status = absl::ResourceExhaustedError(
            absl::StrCat("the results of ", op.QualifiedName(), " take ", result_bytes,
                         " bytes, more than the largest message this server sends (",
                         limits_.max_message_bytes, " bytes, --max-message-bytes)"));
      } else {
        status = Reserve(result_bytes, &state->result_reservation);
      }
      if (!status.ok()) {
        state->call.results.clear();
        state->call.keep_alive.clear();
      }
    }
    const myops::v1::Timing timing =
        status.ok() ? MakeTiming(start, decode_ns, Nanos(Clock::now() - computed), t)
                    : myops::v1::Timing();
    inflight_.Release();
    done(std::move(status), timing);
  });
}

grpc::ServerUnaryReactor* MyopsService::Call(grpc::CallbackServerContext* context,
                                             const grpc::ByteBuffer* request,
                                             grpc::ByteBuffer* response) {
  if (absl::Status denied = auth_.Check(*context); !denied.ok()) {
    return RefuseUnary(context, ToGrpcStatus(denied));
  }
  const auto received = Clock::now();
  auto* reactor = new CallReactor();
  V1CallState& state = reactor->state;
  if (absl::Status parsed = Parse(this, *request, &state); !parsed.ok()) {
    metrics_.Record(Metrics::Rpc::kCall, parsed, {}, 0);
    reactor->Finish(ToGrpcStatus(parsed));
    return reactor;
  }
  ProcessCall(
      &state, received, context->deadline(), [context] { return context->IsCancelled(); },
      [this, reactor, response](absl::Status status, const myops::v1::Timing& timing) {
        V1CallState& state = reactor->state;
        if (status.ok()) status = FinishRegions(state.call, state.shm);
        metrics_.Record(Metrics::Rpc::kCall, status, timing,
                        static_cast<uint64_t>(state.call.input_bytes));
        if (status.ok()) {
          *response =
              EncodeCallResponse(state.call, timing, state.request->request_id(), &state.shm);
        }
        reactor->Finish(ToGrpcStatus(status));
      });
  return reactor;
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* MyopsService::CallStream(
    grpc::CallbackServerContext* context) {
  if (absl::Status denied = auth_.Check(*context); !denied.ok()) {
    return new RefusedStream<grpc::ByteBuffer, grpc::ByteBuffer>(ToGrpcStatus(denied));
  }
  return new StreamReactor<CallStreamKind>(this, context, TryOpenStream());
}

grpc::ServerUnaryReactor* MyopsService::ListOperators(grpc::CallbackServerContext* context,
                                                      const myops::v1::ListOperatorsRequest*,
                                                      myops::v1::ListOperatorsResponse* response) {
  if (absl::Status denied = auth_.Check(*context); !denied.ok()) {
    return RefuseUnary(context, ToGrpcStatus(denied));
  }
  for (const OpInfo& op : executor_->info().registry->ops()) {
    DescribeOperator(op, executor_->devices().devices(), response->add_operators());
  }
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace myops::server
