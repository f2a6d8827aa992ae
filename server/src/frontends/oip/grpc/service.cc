// The Open Inference Protocol front end's RPCs (see frontends/oip/grpc/service.h).
#include "frontends/oip/grpc/service.h"

#include <chrono>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "frontends/grpc/arena_request.h"
#include "frontends/grpc/stream_reactor.h"
#include "frontends/grpc/unary_reactor.h"
#include "frontends/oip/codec.h"
#include "frontends/oip/extensions.h"
#include "myops/version.h"
#include "myops/wire/call_wire.h"
#include "util/clock.h"

namespace myops::server {
namespace {

// A ModelInfer's state: the binding's (binding.h), and the parsed request and its
// protocol-neutral form that argument views point into.
struct KServeCallState : kserve::InferCall {
  ArenaRequest<inference::ModelInferRequest> request;
  kserve::InferRequest decoded;
};

// Owns one ModelInfer's state (its budget and result memory) until gRPC is done with the
// call, or its client has left the response untaken for the stall timeout.
using InferReactor = WatchedUnaryReactor<KServeCallState>;

// The request's inputs (`raw` its raw contents), parameters and outputs as `op`'s
// arguments and results.
absl::Status DecodeForModel(Pipeline* pipeline, const OpInfo& op, const wire::DataFieldValues& raw,
                            KServeCallState* state) {
  if (absl::Status decoded = kserve::DecodeInferRequest(*state->request, raw, op.QualifiedName(),
                                                        pipeline->limits().tensor, &state->decoded);
      !decoded.ok()) {
    return decoded;
  }
  auto reserve = [pipeline, state](int64_t bytes) {
    return pipeline->ReserveWorkingMemory(bytes, &state->shm_copies.emplace_back(), state->account);
  };
  return kserve::BindInfer(op, pipeline->regions(*state), reserve, &state->decoded, state);
}

// Bounds the request's head and reserves the budget for what its parse may take
// (kserve::InferParseReservation): cheap, on the receiving thread, before the request
// waits anywhere. Returns the bytes of its tensor contents (those beyond its head).
absl::StatusOr<int64_t> Reserve(Pipeline* pipeline, const grpc::ByteBuffer& bytes,
                                KServeCallState* state) {
  auto size = wire::CheckInferRequestHead(bytes);
  if (!size.ok()) return size.status();
  if (absl::Status reserved =
          pipeline->ReserveCallRequest(static_cast<int64_t>(bytes.Length()),
                                       kserve::InferParseReservation(bytes.Length(), *size), state);
      !reserved.ok()) {
    return reserved;
  }
  return static_cast<int64_t>(bytes.Length() - size->head);
}

// Parses a reserved request and decodes its inputs and parameters into `state`.
// A request whose inputs do not decode counts as a failure of its model from `received`.
absl::Status ParseReserved(Pipeline* pipeline, const grpc::ByteBuffer& bytes,
                           Clock::time_point received, KServeCallState* state) {
  // The raw contents stay in the received slices until decoding copies them out.
  wire::DataFieldValues raw;
  if (absl::Status parsed = kserve::ParseInferRequest(bytes, state->request.get(), &raw);
      !parsed.ok()) {
    return parsed;
  }
  const OpRegistry& registry = pipeline->registry();
  auto index =
      kserve::FindModel(registry, state->request->model_name(), state->request->model_version());
  if (!index.ok()) return index.status();
  const OpInfo& op = registry.ops()[static_cast<size_t>(*index)];
  absl::Status decoded = DecodeForModel(pipeline, op, raw, state);
  if (!decoded.ok()) pipeline->RecordModelFailure(*index, received);
  return decoded;
}

absl::Status Parse(Pipeline* pipeline, const grpc::ByteBuffer& bytes, Clock::time_point received,
                   KServeCallState* state) {
  if (auto reserved = Reserve(pipeline, bytes, state); !reserved.ok()) return reserved.status();
  return ParseReserved(pipeline, bytes, received, state);
}

// A reserved unary ModelInfer's parse, decode and call, then its response; counted in
// `rpc`.
void PrepareInfer(Pipeline* pipeline, Metrics::Rpc* rpc, InferReactor* reactor) {
  KServeCallState& state = reactor->state;
  if (absl::Status parsed = ParseReserved(pipeline, *reactor->request, reactor->received, &state);
      !parsed.ok()) {
    return reactor->Refuse(pipeline, rpc, parsed);
  }
  reactor->Process(
      pipeline, &state, [pipeline, rpc, reactor](absl::Status status, const Timing& timing) {
        KServeCallState& state = reactor->state;
        if (status.ok()) {
          auto outputs = kserve::InferOutputs(state);
          if (outputs.ok()) {
            *reactor->response = kserve::EncodeInferResponse(*state.request, *outputs, state.call);
          } else {
            status = outputs.status();
          }
        }
        pipeline->metrics().Record(rpc, status, timing,
                                   static_cast<uint64_t>(state.call.input_bytes));
        reactor->FinishWatched(ToGrpcStatus(status));
      });
}

// ModelStreamInfer's steps for StreamReactor: errors travel in the stream as
// error_message (with the request's id), and the stream goes on.
struct StreamInferKind : OneMessagePerRequest<StreamInferKind> {
  using State = KServeCallState;
  static absl::Status Parse(Pipeline* pipeline, const grpc::ByteBuffer& bytes, State* state) {
    return server::Parse(pipeline, bytes, Clock::now(), state);
  }
  template <typename Done>
  static void Process(Pipeline* pipeline, State* state, Clock::time_point received,
                      std::chrono::system_clock::time_point deadline,
                      std::function<bool()> is_cancelled, Done done) {
    pipeline->ProcessCall(state, received, deadline, std::move(is_cancelled), std::move(done));
  }
  static absl::StatusOr<grpc::ByteBuffer> Encode(const State& state, const Timing&) {
    auto outputs = kserve::InferOutputs(state);
    if (!outputs.ok()) return outputs.status();
    return kserve::EncodeStreamInferResponse(*state.request, *outputs, state.call);
  }
  static grpc::ByteBuffer EncodeError(const State& state, const absl::Status& status) {
    return kserve::EncodeStreamInferError(*state.request, status);
  }
  static uint64_t InputBytes(const State& state) {
    return static_cast<uint64_t>(state.call.input_bytes);
  }
};

// What the shared memory RPCs answer on a server that does not accept shared memory.
absl::Status SharedMemoryOff() {
  return absl::UnimplementedError(
      "this server does not accept shared memory (start it with --allow-shared-memory)");
}

// Finishes a small unary RPC now with `status`.
grpc::ServerUnaryReactor* Done(grpc::CallbackServerContext* context, const absl::Status& status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

}  // namespace

KServeService::KServeService(Pipeline* pipeline, BearerAuth auth)
    : pipeline_(pipeline),
      auth_(std::move(auth)),
      infer_rpc_(pipeline->metrics().AddRpc("ModelInfer")),
      stream_infer_rpc_(pipeline->metrics().AddRpc("ModelStreamInfer")),
      watch_(MakeResponseWatch(pipeline)) {}

grpc::ServerUnaryReactor* KServeService::ServerLive(grpc::CallbackServerContext* context,
                                                    const inference::ServerLiveRequest*,
                                                    inference::ServerLiveResponse* response) {
  if (absl::Status denied = auth_.Check(*context); !denied.ok()) return Done(context, denied);
  response->set_live(true);
  return Done(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* KServeService::ServerReady(grpc::CallbackServerContext* context,
                                                     const inference::ServerReadyRequest*,
                                                     inference::ServerReadyResponse* response) {
  if (absl::Status denied = auth_.Check(*context); !denied.ok()) return Done(context, denied);
  response->set_ready(ready());
  return Done(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* KServeService::ModelReady(grpc::CallbackServerContext* context,
                                                    const inference::ModelReadyRequest* request,
                                                    inference::ModelReadyResponse* response) {
  if (absl::Status denied = auth_.Check(*context); !denied.ok()) return Done(context, denied);
  // An unknown model is not ready (as Triton answers), not an error.
  response->set_ready(
      ready() &&
      kserve::FindModel(pipeline_->registry(), request->name(), request->version()).ok());
  return Done(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* KServeService::ServerMetadata(
    grpc::CallbackServerContext* context, const inference::ServerMetadataRequest*,
    inference::ServerMetadataResponse* response) {
  if (absl::Status denied = auth_.Check(*context); !denied.ok()) return Done(context, denied);
  response->set_name("myops");
  response->set_version(MYOPS_VERSION_STRING);
  for (const std::string& e :
       kserve::ServerExtensions(/*rest=*/false, pipeline_->shared_memory() != nullptr)) {
    response->add_extensions(e);
  }
  return Done(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* KServeService::ModelMetadata(
    grpc::CallbackServerContext* context, const inference::ModelMetadataRequest* request,
    inference::ModelMetadataResponse* response) {
  if (absl::Status denied = auth_.Check(*context); !denied.ok()) return Done(context, denied);
  const OpRegistry& registry = pipeline_->registry();
  auto index = kserve::FindModel(registry, request->name(), request->version());
  if (!index.ok()) return Done(context, index.status());
  kserve::DescribeModel(registry.ops()[static_cast<size_t>(*index)], response);
  return Done(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* KServeService::ModelConfig(grpc::CallbackServerContext* context,
                                                     const inference::ModelConfigRequest* request,
                                                     inference::ModelConfigResponse* response) {
  if (absl::Status denied = auth_.Check(*context); !denied.ok()) return Done(context, denied);
  const OpRegistry& registry = pipeline_->registry();
  auto index = kserve::FindModel(registry, request->name(), request->version());
  if (!index.ok()) return Done(context, index.status());
  kserve::DescribeModelConfig(registry.ops()[static_cast<size_t>(*index)],
                              response->mutable_config());
  return Done(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* KServeService::ModelInfer(grpc::CallbackServerContext* context,
                                                    const grpc::ByteBuffer* request,
                                                    grpc::ByteBuffer* response) {
  auto client = auth_.Tenant(*context);
  if (!client.ok()) return RefuseUnary(context, ToGrpcStatus(client.status()));
  auto* reactor = new InferReactor(context, &watch_, request, response, Clock::now());
  KServeCallState& state = reactor->state;
  state.client = *std::move(client);
  state.account = pipeline_->AccountOf(state.client, context->peer());
  auto contents = Reserve(pipeline_, *request, &state);
  if (!contents.ok()) {
    pipeline_->metrics().Record(infer_rpc_, contents.status(), {}, 0);
    reactor->Finish(ToGrpcStatus(contents.status()));
    return reactor;
  }
  // A large request is parsed on a worker, while this thread reads on.
  pipeline_->Prepare(*contents, &state,
                     [this, reactor] { PrepareInfer(pipeline_, infer_rpc_, reactor); });
  return reactor;
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* KServeService::ModelStreamInfer(
    grpc::CallbackServerContext* context) {
  auto client = auth_.Tenant(*context);
  if (!client.ok()) {
    return new RefusedStream<grpc::ByteBuffer, grpc::ByteBuffer>(ToGrpcStatus(client.status()));
  }
  return new StreamReactor<StreamInferKind>(pipeline_, stream_infer_rpc_, context,
                                            *std::move(client));
}

grpc::ServerUnaryReactor* KServeService::ModelStatistics(
    grpc::CallbackServerContext* context, const inference::ModelStatisticsRequest* request,
    inference::ModelStatisticsResponse* response) {
  if (absl::Status denied = auth_.Check(*context); !denied.ok()) return Done(context, denied);
  return Done(context, kserve::DescribeStatsOf(pipeline_->registry(), pipeline_->model_stats(),
                                               request->name(), request->version(), response));
}

grpc::ServerUnaryReactor* KServeService::SystemSharedMemoryStatus(
    grpc::CallbackServerContext* context, const inference::SystemSharedMemoryStatusRequest* request,
    inference::SystemSharedMemoryStatusResponse* response) {
  auto client = auth_.Tenant(*context);
  if (!client.ok()) return Done(context, client.status());
  const OwnedRegions shm(pipeline_->shared_memory(), *client);
  if (!shm) return Done(context, SharedMemoryOff());
  auto regions = shm.Status(request->name());
  if (!regions.ok()) return Done(context, regions.status());
  for (const SharedMemoryRegionInfo& r : *regions) {
    auto& status = (*response->mutable_regions())[r.name];
    status.set_name(r.name);
    status.set_key(r.key);
    status.set_offset(r.offset);
    status.set_byte_size(r.byte_size);
  }
  return Done(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* KServeService::SystemSharedMemoryRegister(
    grpc::CallbackServerContext* context,
    const inference::SystemSharedMemoryRegisterRequest* request,
    inference::SystemSharedMemoryRegisterResponse*) {
  auto client = auth_.Tenant(*context);
  if (!client.ok()) return Done(context, client.status());
  const OwnedRegions shm(pipeline_->shared_memory(), *client);
  if (!shm) return Done(context, SharedMemoryOff());
  return Done(context, shm.Register(request->name(), request->key(), request->offset(),
                                    request->byte_size()));
}

grpc::ServerUnaryReactor* KServeService::SystemSharedMemoryUnregister(
    grpc::CallbackServerContext* context,
    const inference::SystemSharedMemoryUnregisterRequest* request,
    inference::SystemSharedMemoryUnregisterResponse*) {
  auto client = auth_.Tenant(*context);
  if (!client.ok()) return Done(context, client.status());
  const OwnedRegions shm(pipeline_->shared_memory(), *client);
  if (!shm) return Done(context, SharedMemoryOff());
  return Done(context, kserve::UnregisterRegion(shm, request->name()));
}

grpc::ServerUnaryReactor* KServeService::RepositoryIndex(
    grpc::CallbackServerContext* context, const inference::RepositoryIndexRequest*,
    inference::RepositoryIndexResponse* response) {
  if (absl::Status denied = auth_.Check(*context); !denied.ok()) return Done(context, denied);
  for (const kserve::IndexEntry& e : kserve::RepositoryIndex(pipeline_->registry())) {
    auto* m = response->add_models();
    m->set_name(e.name);
    m->set_version(e.version);
    m->set_state(e.state);
  }
  return Done(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* KServeService::RepositoryModelLoad(
    grpc::CallbackServerContext* context, const inference::RepositoryModelLoadRequest* request,
    inference::RepositoryModelLoadResponse*) {
  if (absl::Status denied = auth_.Check(*context); !denied.ok()) return Done(context, denied);
  return Done(context, kserve::RepositoryControlRefused(request->model_name(), /*load=*/true));
}

grpc::ServerUnaryReactor* KServeService::RepositoryModelUnload(
    grpc::CallbackServerContext* context, const inference::RepositoryModelUnloadRequest* request,
    inference::RepositoryModelUnloadResponse*) {
  if (absl::Status denied = auth_.Check(*context); !denied.ok()) return Done(context, denied);
  return Done(context, kserve::RepositoryControlRefused(request->model_name(), /*load=*/false));
}

grpc::ServerUnaryReactor* KServeService::CudaSharedMemoryStatus(
    grpc::CallbackServerContext* context, const inference::CudaSharedMemoryStatusRequest*,
    inference::CudaSharedMemoryStatusResponse*) {
  if (absl::Status denied = auth_.Check(*context); !denied.ok()) return Done(context, denied);
  return Done(context, absl::OkStatus());  // no regions
}

grpc::ServerUnaryReactor* KServeService::CudaSharedMemoryRegister(
    grpc::CallbackServerContext* context, const inference::CudaSharedMemoryRegisterRequest* request,
    inference::CudaSharedMemoryRegisterResponse*) {
  if (absl::Status denied = auth_.Check(*context); !denied.ok()) return Done(context, denied);
  return Done(context, kserve::CudaSharedMemoryRefused(request->name()));
}

grpc::ServerUnaryReactor* KServeService::CudaSharedMemoryUnregister(
    grpc::CallbackServerContext* context, const inference::CudaSharedMemoryUnregisterRequest*,
    inference::CudaSharedMemoryUnregisterResponse*) {
  if (absl::Status denied = auth_.Check(*context); !denied.ok()) return Done(context, denied);
  return Done(context, absl::OkStatus());  // none is registered: as Triton, no error
}

grpc::ServerUnaryReactor* KServeService::TraceSetting(grpc::CallbackServerContext* context,
                                                      const inference::TraceSettingRequest*,
                                                      inference::TraceSettingResponse*) {
  if (absl::Status denied = auth_.Check(*context); !denied.ok()) return Done(context, denied);
  return Done(context, kserve::TraceSettingsRefused());
}

grpc::ServerUnaryReactor* KServeService::LogSettings(grpc::CallbackServerContext* context,
                                                     const inference::LogSettingsRequest*,
                                                     inference::LogSettingsResponse*) {
  if (absl::Status denied = auth_.Check(*context); !denied.ok()) return Done(context, denied);
  return Done(context, kserve::LogSettingsRefused());
}

}  // namespace myops::server
