// The protobuf side of generic calls (myops.v1 Call, CallStream, ListOperators): request
// values to runtime values (views into the parsed request, validated like every wire
// tensor), results to response bytes (result tensors as their own slices, not copied),
// and the registry's descriptions as OperatorInfo.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <grpcpp/support/byte_buffer.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "frontends/grpc/tensor_slice.h"
#include "frontends/myops_v1/call_chunks.h"
#include "frontends/myops_v1/call_shm.h"
#include "frontends/myops_v1/codec.h"
#include "myops/v1/myops.pb.h"
#include "runtime/device.h"
#include "runtime/op_registry.h"
#include "runtime/value.h"

namespace myops::server {

// The memory to reserve before parsing a CallRequest of `length` bytes whose head is
// `head` bytes (wire::CheckCallRequestHead) into an ArenaRequest: the received bytes
// (gRPC's), the parse's copy of the tensor data, and the objects and arrays its head can
// make (empty arguments, 2 bytes each on the wire; packed 1-byte varints of shapes and
// int lists): kHeadFactor bytes a byte, measured by
// tests/server/frontends/grpc/parse_memory_test.cc.
int64_t CallParseReservation(uint64_t length, uint64_t head);

// Parses a CallRequest whose head wire::CheckCallRequestHead has checked (so bounding
// what parsing costs: CallParseReservation). INVALID_ARGUMENT when the bytes are not a
// CallRequest.
absl::Status ParseCheckedCallRequest(const grpc::ByteBuffer& bytes,
                                     myops::v1::CallRequest* request);

// wire::CheckCallRequestHead, then ParseCheckedCallRequest.
absl::Status ParseCallRequest(const grpc::ByteBuffer& bytes, myops::v1::CallRequest* request);

// The arguments as runtime values: tensors checked as DecodeTensor does (field names
// "argument N" or the argument's name), views into `request`, which must outlive them,
// or, for tensors in shared memory, DecodeRegionTensor's (`shm`; null: refused), or, for
// chunked tensors, DecodeChunkedTensor's (`chunks`, taken in order; null: refused).
absl::StatusOr<std::vector<NamedValue>> DecodeArguments(const myops::v1::CallRequest& request,
                                                        const TensorLimits& limits,
                                                        CallShm* shm = nullptr,
                                                        ChunkedTensors* chunks = nullptr);

// CallResponse{outputs: call.results, timing, request_id}; result tensors are slices of
// their memory (holding its owner until gRPC has sent them); those
// written to a region of `shm` are sent as its reference (frontends/myops_v1/call_shm.h).
grpc::ByteBuffer EncodeCallResponse(const OpCall& call, const Timing& timing, uint64_t request_id,
                                    const CallShm* shm = nullptr);

// CallStreamResponse{request_id, response: EncodeCallResponse(...)}. With `chunked`, its
// result tensors with data are sent chunked: as their heads with chunked_byte_size, each
// added to `chunked` in order for EncodeResultChunks.
grpc::ByteBuffer EncodeCallStreamResponse(const OpCall& call, const Timing& timing,
                                          uint64_t request_id, const CallShm* shm = nullptr,
                                          std::vector<TensorView>* chunked = nullptr);

// `op` as listed, with the names of `devices` (the server's) it has kernels for.
void DescribeOperator(const OpInfo& op, const std::vector<Device>& devices,
                      myops::v1::OperatorInfo* out);

}  // namespace myops::server
