// Validation of wire tensors (see codec.h).
#include "codec.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "myops/wire/tensor_wire.h"

namespace myops::server {
namespace {

constexpr char kDTypes[] =
    "expected one of DTYPE_FLOAT32, DTYPE_FLOAT64, DTYPE_FLOAT16, DTYPE_BFLOAT16";

absl::StatusOr<DType> DecodeDType(int value, absl::string_view field) {
  switch (value) {
    case myops::v1::DTYPE_FLOAT32:
      return DType::kFloat32;
    case myops::v1::DTYPE_FLOAT64:
      return DType::kFloat64;
    case myops::v1::DTYPE_FLOAT16:
      return DType::kFloat16;
    case myops::v1::DTYPE_BFLOAT16:
      return DType::kBFloat16;
    case myops::v1::DTYPE_UNSPECIFIED:
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".dtype is DTYPE_UNSPECIFIED; ", kDTypes));
    default:
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".dtype has unknown value ", value, "; ", kDTypes));
  }
}

std::string ShapeString(const myops::v1::Tensor& t) {
  return absl::StrCat("[", absl::StrJoin(t.shape(), ", "), "]");
}

}  // namespace

absl::string_view DTypeName(DType t) {
  switch (t) {
    case DType::kFloat32:
      return "float32";
    case DType::kFloat64:
      return "float64";
    case DType::kFloat16:
      return "float16";
    case DType::kBFloat16:
      return "bfloat16";
  }
  return "unknown";
}

absl::StatusOr<TensorView> DecodeTensor(const myops::v1::Tensor& t, absl::string_view field,
                                        const TensorLimits& limits) {
  absl::StatusOr<TensorView> view = DecodeTensorHead(t, t.data().size(), field, limits);
  if (view.ok()) view->data = t.data().data();
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
  // Element count with overflow checks; a zero size anywhere makes the tensor empty, but
  // every size is still checked.
  int64_t numel = 1;
  bool overflow = false;
  for (int i = 0; i < t.shape_size(); ++i) {
    const int64_t d = t.shape(i);
    if (d < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, ".shape[", i, "] is ", d, "; sizes must be >= 0 (shape ", ShapeString(t), ")"));
    }
    if (!overflow && __builtin_mul_overflow(numel, d, &numel)) overflow = true;
  }
  bool empty = false;
  for (int64_t d : t.shape()) empty |= (d == 0);
  if (empty) {
    numel = 0;
  } else if (overflow) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".shape ", ShapeString(t), " has more elements than fit in int64"));
  }
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

MutableTensorView PrepareOutput(const TensorView& like, myops::v1::Tensor* out) {
  out->set_dtype(static_cast<myops::v1::DType>(like.dtype));
  out->mutable_shape()->Assign(like.shape.begin(), like.shape.end());
  std::string* data = out->mutable_data();
  data->resize(static_cast<size_t>(like.bytes));
  MutableTensorView view;
  view.dtype = like.dtype;
  view.shape = like.shape;
  view.data = data->data();
  view.bytes = like.bytes;
  return view;
}

bool ParseRequest(const grpc::ByteBuffer& bytes, myops::v1::ScaleShiftRequest* request,
                  wire::TensorData* data) {
  return wire::ParseWithTensorData(bytes, myops::v1::ScaleShiftRequest::kInputFieldNumber, request,
                                   data);
}

MutableTensorView AllocateOutput(const TensorView& like, grpc::Slice* slice) {
  *slice = grpc::Slice(grpc_slice_malloc(static_cast<size_t>(like.bytes)), grpc::Slice::STEAL_REF);
  MutableTensorView view;
  view.dtype = like.dtype;
  view.shape = like.shape;
  view.data = const_cast<uint8_t*>(slice->begin());  // freshly allocated: ours alone
  view.bytes = like.bytes;
  return view;
}

grpc::ByteBuffer EncodeResponse(const myops::v1::ScaleShiftRequest& request,
                                const grpc::Slice& output, const myops::v1::Timing& timing) {
  myops::v1::Tensor head;
  head.set_dtype(request.input().dtype());
  *head.mutable_shape() = request.input().shape();
  myops::v1::ScaleShiftResponse rest;
  *rest.mutable_timing() = timing;
  rest.set_request_id(request.request_id());
  return wire::EncodeWithTensorData(myops::v1::ScaleShiftResponse::kOutputFieldNumber, head, output,
                                    rest);
}

}  // namespace myops::server
