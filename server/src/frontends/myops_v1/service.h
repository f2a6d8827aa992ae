// The myops.v1.Myops gRPC service (callback API), a front end of the pipeline. Handlers
// parse and validate with the codec and hand the request to the pipeline (admission,
// memory budget, executor); they never block and never touch a GPU. Responses are
// finished from the executor's completion callback.
#pragma once

#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/slice.h>

#include "absl/status/status.h"
#include "frontends/auth.h"
#include "frontends/grpc/response_watch.h"
#include "frontends/grpc/status.h"
#include "myops/v1/myops.grpc.pb.h"
#include "pipeline/metrics.h"
#include "pipeline/pipeline.h"

namespace myops::server {

// Thread-safe; borrows `pipeline`, which must outlive the gRPC server using this service.
// Both ScaleShift RPCs are raw methods and typed sugar over the generic call
// (frontends/myops_v1/scale_shift.h): requests are parsed by hand (bounded, see
// wire::ParseWithTensorData) and responses encoded by hand, so the output tensor is
// computed straight into its own gRPC slice (no zero-fill, no serialize copy).
// Call and CallStream are raw methods too (frontends/myops_v1/call_service.cc): requests are
// bounded before protobuf parses them (wire::CheckCallRequestHead) and result tensors are sent from
// their own memory.
class MyopsService final : public myops::v1::Myops::WithRawCallbackMethod_ScaleShift<
                               myops::v1::Myops::WithRawCallbackMethod_ScaleShiftStream<
                                   myops::v1::Myops::WithCallbackMethod_ServerInfo<
                                       myops::v1::Myops::WithRawCallbackMethod_Call<
                                           myops::v1::Myops::WithRawCallbackMethod_CallStream<
                                               myops::v1::Myops::WithCallbackMethod_ListOperators<
                                                   myops::v1::Myops::Service>>>>>> {
 public:
  // `auth` checks every call of this service (off by default). Adds its RPCs' series to
  // the pipeline's metrics.
  explicit MyopsService(Pipeline* pipeline, BearerAuth auth = {});

  grpc::ServerUnaryReactor* ScaleShift(grpc::CallbackServerContext* context,
                                       const grpc::ByteBuffer* request,
                                       grpc::ByteBuffer* response) override;

  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* ScaleShiftStream(
      grpc::CallbackServerContext* context) override;

  grpc::ServerUnaryReactor* ServerInfo(grpc::CallbackServerContext* context,
                                       const myops::v1::ServerInfoRequest* request,
                                       myops::v1::ServerInfoResponse* response) override;

  grpc::ServerUnaryReactor* Call(grpc::CallbackServerContext* context,
                                 const grpc::ByteBuffer* request,
                                 grpc::ByteBuffer* response) override;

  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* CallStream(
      grpc::CallbackServerContext* context) override;

  grpc::ServerUnaryReactor* ListOperators(grpc::CallbackServerContext* context,
                                          const myops::v1::ListOperatorsRequest* request,
                                          myops::v1::ListOperatorsResponse* response) override;

 private:
  Pipeline* const pipeline_;
  const BearerAuth auth_;
  // This front end's series in the pipeline's metrics.
  Metrics::Rpc* const scale_shift_rpc_;
  Metrics::Rpc* const scale_shift_stream_rpc_;
  Metrics::Rpc* const call_rpc_;
  Metrics::Rpc* const call_stream_rpc_;
  // Cancels ScaleShift and Call calls whose clients leave their responses untaken.
  ResponseWatch watch_;
};

}  // namespace myops::server
