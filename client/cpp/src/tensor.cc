// DType helpers (over the table in myops/common/dtype.h), overflow-checked tensor sizes
// and the validation of tensor views: the one place where the client decides whether a
// tensor is well formed before sending it.
#include "myops/client/tensor.h"

#include <limits>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace myops::client {
namespace {

bool IsKnown(DType dtype) { return FindDTypeInfo(dtype) != nullptr; }

}  // namespace

size_t DTypeItemSize(DType dtype) { return static_cast<size_t>(ItemSize(dtype)); }

absl::StatusOr<DType> ParseDType(absl::string_view name) {
  if (std::optional<DType> dtype = DTypeFromName(name)) return *dtype;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown dtype \"", name, "\"; expected one of ", DTypeNameList()));
}

std::string ShapeToString(absl::Span<const int64_t> shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

absl::StatusOr<int64_t> NumElements(absl::Span<const int64_t> shape) {
  bool empty = false;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0) {
      return absl::InvalidArgumentError(absl::StrCat("shape ", ShapeToString(shape),
                                                     " has a negative dim (", shape[i],
                                                     " at index ", i, "); expected dims >= 0"));
    }
    empty = empty || shape[i] == 0;
  }
  if (empty) return 0;  // A 0 anywhere wins over an overflowing product of the others.
  int64_t numel = 1;
  for (int64_t dim : shape) {
    if (__builtin_mul_overflow(numel, dim, &numel)) {
      return absl::InvalidArgumentError(
          absl::StrCat("shape ", ShapeToString(shape),
                       " has more elements than int64 can count; expected a product of dims <= ",
                       std::numeric_limits<int64_t>::max()));
    }
  }
  return numel;
}

absl::StatusOr<size_t> TensorByteSize(DType dtype, absl::Span<const int64_t> shape) {
  if (!IsKnown(dtype)) {
    return absl::InvalidArgumentError(absl::StrCat("dtype ", static_cast<int32_t>(dtype),
                                                   " is not a known DType; expected one of ",
                                                   DTypeNameList()));
  }
  absl::StatusOr<int64_t> numel = NumElements(shape);
  if (!numel.ok()) return numel.status();
  int64_t bytes = 0;
  if (__builtin_mul_overflow(*numel, static_cast<int64_t>(DTypeItemSize(dtype)), &bytes)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "shape ", ShapeToString(shape), " of ", DTypeName(dtype), " has ", *numel,
        " elements, whose byte size overflows int64; expected at most ",
        std::numeric_limits<int64_t>::max() / static_cast<int64_t>(DTypeItemSize(dtype)),
        " elements"));
  }
  if (static_cast<uint64_t>(bytes) > std::numeric_limits<size_t>::max()) {
    return absl::InvalidArgumentError(absl::StrCat("shape ", ShapeToString(shape), " needs ", bytes,
                                                   " bytes, more than this platform can address"));
  }
  return static_cast<size_t>(bytes);
}

absl::Status ValidateTensorView(const TensorView& view, absl::string_view what) {
  absl::StatusOr<size_t> expected = TensorByteSize(view.dtype, view.shape);
  if (!expected.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", expected.status().message()));
  }
  if (view.size_bytes != *expected) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": size_bytes is ", view.size_bytes, " but shape ",
                     ShapeToString(view.shape), " of ", DTypeName(view.dtype), " needs exactly ",
                     *expected, " bytes (numel * ", DTypeItemSize(view.dtype), ")"));
  }
  if (view.data == nullptr && view.size_bytes != 0) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": data is null but size_bytes is ",
                                                   view.size_bytes, "; expected a buffer"));
  }
  return absl::OkStatus();
}

absl::StatusOr<Tensor> Tensor::Allocate(DType dtype, std::vector<int64_t> shape) {
  absl::StatusOr<size_t> bytes = TensorByteSize(dtype, shape);
  if (!bytes.ok()) return bytes.status();
  return Tensor(dtype, std::move(shape), std::string(*bytes, '\0'));
}

}  // namespace myops::client
