// The myops.v1 front end's generic calls: Call, CallStream and ListOperators (see
// service.h). Requests go through the same admission, memory budget, deadlines and
// executor as ScaleShift; the op runs boxed (runtime/boxed_call.h).
#include <chrono>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "call_codec.h"
#include "clock.h"
#include "service.h"
#include "stream_reactor.h"

namespace myops::server {
namespace {

// A myops.v1 call's state: the pipeline's, and the parsed request its views point into.
struct V1CallState : CallState {
  myops::v1::CallRequest request;
  CallShm shm;                                // regions its tensors are in (call_shm.h)
  std::vector<BudgetReservation> shm_copies;  // argument tensors copied out of regions
};

// The unary Call's reactor: owns the call's state (and so its budget and result memory)
// until gRPC is done with the call. Deletes itself in OnDone.
class CallReactor final : public grpc::ServerUnaryReactor {
 public:
  V1CallState state;
  void OnDone() override { delete this; }
};

// Reserves the budget for a request of `bytes`, parses it and decodes its arguments.
absl::Status Parse(MyopsService* service, const grpc::ByteBuffer& bytes, V1CallState* state) {
  if (absl::Status reserved =
          service->ReserveCallRequest(static_cast<int64_t>(bytes.Length()), state);
      !reserved.ok()) {
    return reserved;
  }
  if (absl::Status parsed = ParseCallRequest(bytes, &state->request); !parsed.ok()) return parsed;
  state->shm.registry = service->shared_memory();
  state->shm.reserve = [service, state](int64_t n) {
    return service->ReserveWorkingMemory(n, &state->shm_copies.emplace_back());
  };
  auto args = DecodeArguments(state->request, service->limits().tensor, &state->shm);
  if (!args.ok()) return args.status();
  state->shm.inline_unfit = state->request.inline_unfit_results();
  if (absl::Status regions = ResolveResultRegions(state->request, &state->shm); !regions.ok()) {
    return regions;
  }
  state->call.result_buffer = ResultBuffer(state->shm);
  state->args = std::move(*args);
  state->op = state->request.op();
  state->device = state->request.device();
  return absl::OkStatus();
}

// CallStream's steps for StreamReactor.
struct CallStreamKind {
  using State = V1CallState;
  static constexpr Metrics::Rpc kRpc = Metrics::Rpc::kCallStream;
  static absl::Status Parse(MyopsService* service, const grpc::ByteBuffer& bytes, State* state) {
    return server::Parse(service, bytes, state);
  }
  template <typename Done>
  static void Process(MyopsService* service, State* state, Clock::time_point received,
                      std::chrono::system_clock::time_point deadline,
                      std::function<bool()> is_cancelled, Done done) {
    service->ProcessCall(state, received, deadline, std::move(is_cancelled), std::move(done));
  }
  static absl::StatusOr<grpc::ByteBuffer> Encode(const State& state,
                                                 const myops::v1::Timing& timing) {
    if (absl::Status finished = FinishRegions(state.call, state.shm); !finished.ok()) {
      return finished;
    }
    return EncodeCallStreamResponse(state.call, timing, state.request.request_id(), &state.shm);
  }
  static uint64_t RequestId(const State& state) { return state.request.request_id(); }
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
  std::vector<std::string> working;
  for (const Device& d : devices.devices()) {
    if (has_kernel(d)) working.push_back(d.Name());
  }
  const std::string alternatives =
      working.empty() ? "none of this server's devices (" + devices.Names() + ") has one"
                      : "it runs on " + absl::StrJoin(working, ", ");
  if (wanted.any_kind) {
    for (size_t i = 0; i < devices.devices().size(); ++i) {
      if (has_kernel(devices.devices()[i])) return static_cast<int>(i);
    }
    return absl::FailedPreconditionError(
        absl::StrCat("operator ", op.QualifiedName(), " has no kernel here: ", alternatives));
  }
  auto slot = devices.Resolve(wanted, hint);
  if (!slot.ok()) return slot.status();
  const Device& chosen = devices.devices()[static_cast<size_t>(*slot)];
  if (!has_kernel(chosen)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "operator ", op.QualifiedName(), " has no kernel for ", chosen.Name(), "; ", alternatives));
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
  Done done = [this, &op, model, start, given_done = std::move(given_done)](
                  absl::Status status, const myops::v1::Timing& timing) {
    metrics_.RecordOperator(model, op.QualifiedName(), status);
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
  job.is_cancelled = std::move(is_cancelled);
  const int64_t decode_ns = Nanos(Clock::now() - start);
  executor_->Submit(std::move(job), [this, state, start, decode_ns, &op, done = std::move(done)](
                                        absl::Status status, const JobTiming& t) {
    const auto computed = Clock::now();
    if (status.ok()) {
      // Results exist by now (the op allocated them); they are held from here until sent.
      const int64_t result_bytes = ResultBytes(state->call);
      if (result_bytes > limits_.max_message_bytes) {
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
              EncodeCallResponse(state.call, timing, state.request.request_id(), &state.shm);
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
