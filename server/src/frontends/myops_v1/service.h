// The myops.v1.Myops gRPC service (callback API), a front end of the pipeline. Handlers
// parse and validate with the codec and hand the request to the pipeline (admission,
// memory budget, executor); they never block and never touch a GPU. Responses are
// finished from the executor's completion callback.
#pragma once

#include <cstdint>

#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/slice.h>

#include "absl/status/status.h"
#include "frontends/auth.h"
#include "frontends/grpc/status.h"
#include "frontends/myops_v1/codec.h"
#include "myops/v1/myops.grpc.pb.h"
#include "pipeline/memory_budget.h"
#include "pipeline/metrics.h"
#include "pipeline/pipeline.h"

namespace myops::server {

// One ScaleShift request on its way through the pipeline, whichever RPC carried it: the parsed
// message (all but the input's data), the input's data in the received slices (or
// gathered from them), the output's slice, and the budget reserved for both. Owned by
// its RPC's reactor until the response has been written.
struct RequestState {
  myops::v1::ScaleShiftRequest request;
  wire::TensorData input;
  grpc::Slice gathered;  // the input, copied: when split over slices or misaligned
  grpc::Slice output;
  BudgetReservation reservation;

  // Whether the input must be copied to be contiguous and aligned to `alignment` (its
  // item size: kernels load whole elements, and a misaligned load is undefined behaviour).
  bool MustGather(int64_t alignment) const;
  // The input's bytes, contiguous and aligned to `alignment` (copied into `gathered` when
  // MustGather).
  const void* ContiguousInput(int64_t alignment);
};

// Thread-safe; borrows `pipeline`, which must outlive the gRPC server using this service.
// Both ScaleShift RPCs are raw methods: requests are parsed by hand (bounded, see
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
};

}  // namespace myops::server
