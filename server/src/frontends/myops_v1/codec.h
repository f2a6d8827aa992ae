// The protobuf side of the server's data path: validates wire tensors and exposes them
// as views (no copy), and prepares response tensors whose buffers the executor fills.
// Validation happens before anything sized by the request is allocated.
#pragma once

#include <cstdint>
#include "absl/strings/string_view.h"

#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/slice.h>

#include "absl/status/statusor.h"
#include "myops/v1/myops.pb.h"
#include "myops/wire/tensor_wire.h"
#include "pipeline/timing.h"
#include "runtime/tensor_view.h"

namespace myops::server {

// Checks `t` (dtype known, dims >= 0 and at most max_dims, element count and byte size
// computed without overflow and within `limits`, data exactly numel * itemsize bytes)
// and returns a view of its bytes; a bool tensor's bytes must each be 0 or 1. The view
// borrows from `t`. Errors are
// INVALID_ARGUMENT naming `field` (e.g. "input") and saying what was expected.
absl::StatusOr<TensorView> DecodeTensor(const myops::v1::Tensor& t, absl::string_view field,
                                        const TensorLimits& limits);

// As DecodeTensor, for a tensor whose `data_bytes` bytes of data are kept outside `t`
// (t's own data is ignored): the view's data is null, for the caller to set.
absl::StatusOr<TensorView> DecodeTensorHead(const myops::v1::Tensor& t, uint64_t data_bytes,
                                            absl::string_view field, const TensorLimits& limits);

// The RPCs' wire side (raw gRPC methods): parses a request from the received bytes, all
// but its input's data, which stays in the received slices (`data`). INVALID_ARGUMENT
// when they are not a ScaleShiftRequest or its head is too large (wire::kMaxHeadBytes).
absl::Status ParseRequest(const grpc::ByteBuffer& bytes, myops::v1::ScaleShiftRequest* request,
                          wire::TensorData* data);

// Allocates an uninitialized slice for `like`'s bytes and returns a writable view of it.
// `slice` must not move until the view's user is done.
MutableTensorView AllocateOutput(const TensorView& like, grpc::Slice* slice);

// Writes `timing` as myops.v1 sends it into `out`.
void ToProto(const Timing& timing, myops::v1::Timing* out);

// ScaleShiftResponse{output: {input's dtype and shape, data = `output`}, timing,
// request_id} in protobuf wire format, with `output` as its own slice (not copied).
grpc::ByteBuffer EncodeResponse(const myops::v1::ScaleShiftRequest& request,
                                const grpc::Slice& output, const Timing& timing);

// ScaleShiftStreamResponse{request_id, response: EncodeResponse(...)}, the output again
// its own slice.
grpc::ByteBuffer EncodeStreamResponse(const myops::v1::ScaleShiftRequest& request,
                                      const grpc::Slice& output, const Timing& timing);

// ScaleShiftStreamResponse{request_id, error: {status's code and message}}.
grpc::ByteBuffer EncodeStreamError(uint64_t request_id, const absl::Status& status);

// The most a response can exceed its request's size by: ScaleShiftResponse's timing and
// request_id, and the stream response's envelope, against a request whose alpha, beta
// and device are all absent. The server's send limit is its receive limit plus this.
inline constexpr int64_t kMaxResponseOverheadBytes = 4096;

}  // namespace myops::server
