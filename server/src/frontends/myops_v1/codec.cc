// Validation of wire tensors (see frontends/myops_v1/codec.h).
#include "frontends/myops_v1/codec.h"

#include <string_view>

#include <optional>

#include "absl/algorithm/container.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "myops/wire/tensor_wire.h"

namespace myops::server {
namespace {

absl::StatusOr<DType> DecodeDType(int value, absl::string_view field) {
  if (std::optional<DType> dtype = DTypeFromWire(value)) return *dtype;
  if (value == myops::v1::DTYPE_UNSPECIFIED) {
    return absl::InvalidArgumentError(absl::StrCat(field,
                                                   ".dtype is DTYPE_UNSPECIFIED; expected one of ",
                                                   DTypeNameList(/*wire_names=*/true)));
  }
  return absl::InvalidArgumentError(absl::StrCat(field, ".dtype has unknown value ", value,
                                                 "; expected one of ",
                                                 DTypeNameList(/*wire_names=*/true)));
}

std::string ShapeString(const myops::v1::Tensor& t) {
  return absl::StrCat("[", absl::StrJoin(t.shape(), ", "), "]");
}

}  // namespace

absl::StatusOr<TensorView> DecodeTensor(const myops::v1::Tensor& t, absl::string_view field,
                                        const TensorLimits& limits) {
  absl::StatusOr<TensorView> view = DecodeTensorHead(t, t.data().size(), field, limits);
  if (!view.ok()) return view;
  view->data = t.data().data();
  // A C++ bool holds 0 or 1; any other byte makes reading it undefined behaviour.
  if (view->dtype == DType::kBool &&
      t.data().find_first_not_of(std::string_view("\0\1", 2)) != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " is a bool tensor with a byte other than 0 or 1"));
  }
  return view;
}

absl::StatusOr<TensorView> DecodeTensorHead(const myops::v1::Tensor& t, uint64_t data_bytes,
                                            absl::string_view field, const TensorLimits& limits) {
  auto dtype = DecodeDType(t.dtype(), field);
  if (!dtype.ok()) return dtype.status();
  if (t.shape_size() > limits.max_dims) {
    return absl::InvalidArgumentError(absl::StrCat(field, " has ", t.shape_size(),
                                                   " dimensions; at most ", limits.max_dims,
                                                   " are supported"));
  }
  // The product of the sizes with zeros counted as 1 must fit in int64, even for an empty
  // tensor: PyTorch computes contiguous strides from it and refuses an overflow.
  int64_t extent = 1;
  bool empty = false;
  for (int i = 0; i < t.shape_size(); ++i) {
    const int64_t d = t.shape(i);
    if (d < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, ".shape[", i, "] is ", d, "; sizes must be >= 0 (shape ", ShapeString(t), ")"));
    }
    if (d == 0) {
      empty = true;
    } else if (__builtin_mul_overflow(extent, d, &extent)) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".shape ", ShapeString(t), " has more elements than fit in int64",
                       absl::c_linear_search(t.shape(), int64_t{0}) ? " (zero sizes aside)" : ""));
    }
  }
  const int64_t numel = empty ? 0 : extent;
  if (numel > limits.max_elements) {
    return absl::InvalidArgumentError(absl::StrCat(field, " has ", numel, " elements (shape ",
                                                   ShapeString(t), "); this server's limit is ",
                                                   limits.max_elements));
  }
  int64_t bytes = 0;
  if (__builtin_mul_overflow(numel, ItemSize(*dtype), &bytes) || bytes > limits.max_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, " needs ", numel, " x ", ItemSize(*dtype), " bytes (shape ", ShapeString(t), ", ",
        DTypeName(*dtype), "); this server's limit is ", limits.max_bytes, " bytes"));
  }
  if (data_bytes != static_cast<uint64_t>(bytes)) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ".data has ", data_bytes, " bytes but shape ", ShapeString(t), " of ",
        DTypeName(*dtype), " needs exactly ", bytes, " (", numel, " x ", ItemSize(*dtype), ")"));
  }
  TensorView view;
  view.dtype = *dtype;
  view.shape.assign(t.shape().begin(), t.shape().end());
  view.bytes = bytes;
  return view;
}

absl::Status ParseRequest(const grpc::ByteBuffer& bytes, myops::v1::ScaleShiftRequest* request,
                          wire::TensorData* data) {
  return wire::ParseWithTensorData(bytes, myops::v1::ScaleShiftRequest::kInputFieldNumber, request,
                                   data);
}

MutableTensorView AllocateOutput(const TensorView& like, grpc::Slice* slice) {
  // Never inline: grpc_slice_malloc keeps up to 23 bytes inside the grpc_slice itself, at
  // an odd offset, where the kernel's element stores would be misaligned.
  *slice =
      grpc::Slice(grpc_slice_malloc_large(static_cast<size_t>(like.bytes)), grpc::Slice::STEAL_REF);
  MutableTensorView view;
  view.dtype = like.dtype;
  view.shape = like.shape;
  view.data = const_cast<uint8_t*>(slice->begin());  // freshly allocated: ours alone
  view.bytes = like.bytes;
  return view;
}

void ToProto(const Timing& timing, myops::v1::Timing* out) {
  out->set_decode_ns(timing.decode_ns);
  out->set_queue_ns(timing.queue_ns);
  out->set_compute_ns(timing.compute_ns);
  out->set_encode_ns(timing.encode_ns);
  out->set_total_ns(timing.total_ns);
  out->set_device(timing.device);
}

grpc::ByteBuffer EncodeResponse(const myops::v1::ScaleShiftRequest& request,
                                const grpc::Slice& output, const Timing& timing) {
  myops::v1::Tensor head;
  head.set_dtype(request.input().dtype());
  *head.mutable_shape() = request.input().shape();
  myops::v1::ScaleShiftResponse rest;
  ToProto(timing, rest.mutable_timing());
  rest.set_request_id(request.request_id());
  return wire::EncodeWithTensorData(myops::v1::ScaleShiftResponse::kOutputFieldNumber, head, output,
                                    rest);
}

grpc::ByteBuffer EncodeStreamResponse(const myops::v1::ScaleShiftRequest& request,
                                      const grpc::Slice& output, const Timing& timing) {
  const grpc::ByteBuffer inner = EncodeResponse(request, output, timing);
  std::vector<grpc::Slice> slices;
  if (!inner.Dump(&slices).ok()) slices.clear();  // Cannot fail: we built it from slices.
  // Field order is free in protobuf: request_id first, then the response message.
  myops::v1::ScaleShiftStreamResponse envelope;
  envelope.set_request_id(request.request_id());
  std::string prefix = envelope.SerializeAsString();
  wire::AppendVarint((uint64_t{myops::v1::ScaleShiftStreamResponse::kResponseFieldNumber} << 3) | 2,
                     &prefix);
  wire::AppendVarint(inner.Length(), &prefix);
  slices.insert(slices.begin(), grpc::Slice(prefix));
  return grpc::ByteBuffer(slices.data(), slices.size());
}

grpc::ByteBuffer EncodeStreamError(uint64_t request_id, const absl::Status& status) {
  myops::v1::ScaleShiftStreamResponse response;
  response.set_request_id(request_id);
  response.mutable_error()->set_code(static_cast<int>(status.code()));
  response.mutable_error()->set_message(std::string(status.message()));
  grpc::Slice slice(response.SerializeAsString());
  return grpc::ByteBuffer(&slice, 1);
}

}  // namespace myops::server
