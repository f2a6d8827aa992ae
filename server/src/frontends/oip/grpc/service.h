// The Open Inference Protocol (KServe v2) gRPC front end: inference.GRPCInferenceService
// (proto/kserve/v2/grpc_predict_v2.proto) over the same pipeline as myops.v1's generic
// Call (Pipeline::ProcessCall: admission, memory budget, deadlines, executor,
// metrics). Models are the served operators (frontends/oip/codec.h has the mapping). Protobuf
// side: no torch here.
#pragma once

#include <atomic>

#include <grpcpp/support/byte_buffer.h>

#include "frontends/auth.h"
#include "frontends/grpc/response_watch.h"
#include "frontends/grpc/status.h"
#include "kserve/v2/grpc_predict_v2.grpc.pb.h"
#include "pipeline/metrics.h"
#include "pipeline/pipeline.h"

namespace myops::server {

// Thread-safe; borrows `pipeline` (and its executor), which must outlive the gRPC server
// using this service. ModelInfer and ModelStreamInfer (Triton's extension: pipelined
// requests, errors as error_message while the stream goes on; open streams count against
// --max-streams) are raw methods so that result tensors are written into
// the response from their own memory. ModelStatistics is Triton's "statistics"
// extension. Every RPC checks `auth` (the same token as myops.v1).
namespace kserve_grpc {
using G = inference::GRPCInferenceService;
// Every RPC of the service as a callback method (ModelInfer and ModelStreamInfer raw).
using ServiceBase = G::WithCallbackMethod_LogSettings<G::WithCallbackMethod_TraceSetting<
    G::WithCallbackMethod_CudaSharedMemoryUnregister<G::WithCallbackMethod_CudaSharedMemoryRegister<
        G::WithCallbackMethod_CudaSharedMemoryStatus<G::WithCallbackMethod_RepositoryModelUnload<
            G::WithCallbackMethod_RepositoryModelLoad<G::WithCallbackMethod_RepositoryIndex<
                G::WithCallbackMethod_SystemSharedMemoryStatus<
                    G::WithCallbackMethod_SystemSharedMemoryRegister<
                        G::WithCallbackMethod_SystemSharedMemoryUnregister<
                            G::WithCallbackMethod_ModelStatistics<
                                G::WithRawCallbackMethod_ModelStreamInfer<
                                    G::WithCallbackMethod_ModelConfig<
                                        G::WithCallbackMethod_ServerLive<
                                            G::WithCallbackMethod_ServerReady<
                                                G::WithCallbackMethod_ModelReady<
                                                    G::WithCallbackMethod_ServerMetadata<
                                                        G::WithCallbackMethod_ModelMetadata<
                                                            G::WithRawCallbackMethod_ModelInfer<
                                                                G::Service>>>>>>>>>>>>>>>>>>>>;
}  // namespace kserve_grpc

class KServeService final : public kserve_grpc::ServiceBase {
 public:
  // Adds its RPCs' series to the pipeline's metrics.
  KServeService(Pipeline* pipeline, BearerAuth auth);

  // From now on ServerReady and ModelReady answer false (the server drains).
  void BeginDrain() { draining_.store(true, std::memory_order_release); }

  grpc::ServerUnaryReactor* ServerLive(grpc::CallbackServerContext* context,
                                       const inference::ServerLiveRequest* request,
                                       inference::ServerLiveResponse* response) override;
  grpc::ServerUnaryReactor* ServerReady(grpc::CallbackServerContext* context,
                                        const inference::ServerReadyRequest* request,
                                        inference::ServerReadyResponse* response) override;
  grpc::ServerUnaryReactor* ModelReady(grpc::CallbackServerContext* context,
                                       const inference::ModelReadyRequest* request,
                                       inference::ModelReadyResponse* response) override;
  grpc::ServerUnaryReactor* ServerMetadata(grpc::CallbackServerContext* context,
                                           const inference::ServerMetadataRequest* request,
                                           inference::ServerMetadataResponse* response) override;
  grpc::ServerUnaryReactor* ModelMetadata(grpc::CallbackServerContext* context,
                                          const inference::ModelMetadataRequest* request,
                                          inference::ModelMetadataResponse* response) override;
  grpc::ServerUnaryReactor* ModelConfig(grpc::CallbackServerContext* context,
                                        const inference::ModelConfigRequest* request,
                                        inference::ModelConfigResponse* response) override;
  grpc::ServerUnaryReactor* ModelInfer(grpc::CallbackServerContext* context,
                                       const grpc::ByteBuffer* request,
                                       grpc::ByteBuffer* response) override;
  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* ModelStreamInfer(
      grpc::CallbackServerContext* context) override;
  // Statistics of one model, or of every served model when the request names none
  // (Pipeline::model_stats(): requests of every front end); NOT_FOUND for an unknown
  // model or version.
  grpc::ServerUnaryReactor* ModelStatistics(grpc::CallbackServerContext* context,
                                            const inference::ModelStatisticsRequest* request,
                                            inference::ModelStatisticsResponse* response) override;
  // Triton's "system_shared_memory" extension over Pipeline::shared_memory():
  // UNIMPLEMENTED when the server does not accept shared memory; otherwise the registry's
  // statuses (shm/shared_memory.h).
  grpc::ServerUnaryReactor* SystemSharedMemoryStatus(
      grpc::CallbackServerContext* context,
      const inference::SystemSharedMemoryStatusRequest* request,
      inference::SystemSharedMemoryStatusResponse* response) override;
  grpc::ServerUnaryReactor* SystemSharedMemoryRegister(
      grpc::CallbackServerContext* context,
      const inference::SystemSharedMemoryRegisterRequest* request,
      inference::SystemSharedMemoryRegisterResponse* response) override;
  grpc::ServerUnaryReactor* SystemSharedMemoryUnregister(
      grpc::CallbackServerContext* context,
      const inference::SystemSharedMemoryUnregisterRequest* request,
      inference::SystemSharedMemoryUnregisterResponse* response) override;
  // Triton's extensions answered as frontends/oip/extensions.h says: the repository
  // index (every served operator, READY), load/unload refused, CUDA shared memory (none
  // registered, registering refused), trace and log settings refused.
  grpc::ServerUnaryReactor* RepositoryIndex(grpc::CallbackServerContext* context,
                                            const inference::RepositoryIndexRequest* request,
                                            inference::RepositoryIndexResponse* response) override;
  grpc::ServerUnaryReactor* RepositoryModelLoad(
      grpc::CallbackServerContext* context, const inference::RepositoryModelLoadRequest* request,
      inference::RepositoryModelLoadResponse* response) override;
  grpc::ServerUnaryReactor* RepositoryModelUnload(
      grpc::CallbackServerContext* context, const inference::RepositoryModelUnloadRequest* request,
      inference::RepositoryModelUnloadResponse* response) override;
  grpc::ServerUnaryReactor* CudaSharedMemoryStatus(
      grpc::CallbackServerContext* context, const inference::CudaSharedMemoryStatusRequest* request,
      inference::CudaSharedMemoryStatusResponse* response) override;
  grpc::ServerUnaryReactor* CudaSharedMemoryRegister(
      grpc::CallbackServerContext* context,
      const inference::CudaSharedMemoryRegisterRequest* request,
      inference::CudaSharedMemoryRegisterResponse* response) override;
  grpc::ServerUnaryReactor* CudaSharedMemoryUnregister(
      grpc::CallbackServerContext* context,
      const inference::CudaSharedMemoryUnregisterRequest* request,
      inference::CudaSharedMemoryUnregisterResponse* response) override;
  grpc::ServerUnaryReactor* TraceSetting(grpc::CallbackServerContext* context,
                                         const inference::TraceSettingRequest* request,
                                         inference::TraceSettingResponse* response) override;
  grpc::ServerUnaryReactor* LogSettings(grpc::CallbackServerContext* context,
                                        const inference::LogSettingsRequest* request,
                                        inference::LogSettingsResponse* response) override;

 private:
  bool ready() const { return !draining_.load(std::memory_order_acquire); }

  Pipeline* const pipeline_;
  const BearerAuth auth_;
  Metrics::Rpc* const infer_rpc_;  // this front end's series in the pipeline's metrics
  Metrics::Rpc* const stream_infer_rpc_;
  // Cancels ModelInfer calls whose clients leave their responses untaken.
  ResponseWatch watch_;
  std::atomic<bool> draining_{false};
};

}  // namespace myops::server
