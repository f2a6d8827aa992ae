// Tensor types of the myops C++ client: element types (DType), non-owning views of
// caller memory (TensorView, MutableTensorView) and an owning tensor (Tensor).
//
// A tensor is a dtype, a shape and raw little-endian, row-major (C order) bytes: exactly
// product(shape) * itemsize bytes, as on the wire (proto/myops/v1/myops.proto). A 0-d
// tensor (empty shape) has one element; a 0 in the shape makes an empty tensor.
#ifndef MYOPS_CLIENT_TENSOR_H_
#define MYOPS_CLIENT_TENSOR_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "myops/common/dtype.h"

namespace myops::client {

// Element type: the repository's one dtype table (myops/common/dtype.h, shipped with
// these headers). Values equal the wire enum myops.v1.DType: kFloat32 = 1, kFloat64,
// kFloat16, kBFloat16, kInt8, kInt16, kInt32, kInt64, kUInt8, kBool = 10.
using DType = ::myops::DType;

// Bytes per element (4 for float32, 1 for bool, ...); 0 for a value that is not a DType.
size_t DTypeItemSize(DType dtype);

// "float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64",
// "uint8", "bool"; "unknown" for other values.
using ::myops::DTypeName;

// Inverse of DTypeName. Unknown names give InvalidArgumentError listing the valid ones.
absl::StatusOr<DType> ParseDType(absl::string_view name);

// Number of elements of `shape` (1 for an empty shape). InvalidArgumentError when a dim is
// negative or the product overflows int64_t.
absl::StatusOr<int64_t> NumElements(absl::Span<const int64_t> shape);

// product(shape) * DTypeItemSize(dtype) with overflow checks. InvalidArgumentError for an
// unknown dtype, a negative dim or a size that does not fit in size_t / int64_t.
absl::StatusOr<size_t> TensorByteSize(DType dtype, absl::Span<const int64_t> shape);

// Read-only view of caller-owned memory. Does not own `data`; the memory must stay valid
// and unchanged for as long as a call that was given the view needs it (see Client).
// A plain value type: copying copies the shape, never the data.
struct TensorView {
  DType dtype = DType::kFloat32;
  std::vector<int64_t> shape;
  const void* data = nullptr;
  size_t size_bytes = 0;
};

// Writable view of caller-owned memory; otherwise as TensorView.
struct MutableTensorView {
  DType dtype = DType::kFloat32;
  std::vector<int64_t> shape;
  void* data = nullptr;
  size_t size_bytes = 0;

  TensorView AsConst() const { return TensorView{dtype, shape, data, size_bytes}; }
};

// OK when the view is self-consistent: known dtype, every dim >= 0, size_bytes ==
// numel * itemsize (overflow-checked) and data non-null unless size_bytes is 0.
// Otherwise InvalidArgumentError saying what was received and what was expected;
// `what` names the tensor in the message (e.g. "input").
absl::Status ValidateTensorView(const TensorView& view, absl::string_view what = "tensor");

// An owning tensor: dtype, shape and its bytes, in a std::string (a result's bytes are
// copied there once, from the received message), or, for results asked for with
// CallOptions::results_in_shared_memory, in the client's shared memory region the server
// wrote them to (in_shared_memory(): data() points there, bytes() is empty; the region is
// not reused while the tensor, or a copy of it, lives; copies share the bytes). Not
// validated on construction; use Tensor::Allocate or ValidateTensorView(tensor.view())
// where that matters.
// Thread-compatible: const methods may be called concurrently, mutation needs exclusion.
class Tensor {
 public:
  Tensor() = default;
  Tensor(DType dtype, std::vector<int64_t> shape, std::string bytes)
      : dtype_(dtype), shape_(std::move(shape)), bytes_(std::move(bytes)) {}

  // A tensor of the given dtype and shape, zero-filled. InvalidArgumentError as
  // TensorByteSize.
  static absl::StatusOr<Tensor> Allocate(DType dtype, std::vector<int64_t> shape);

  // A tensor whose `size` bytes at `data` stay valid while `owner` (or a copy) lives.
  static Tensor InMemoryOf(DType dtype, std::vector<int64_t> shape, void* data, size_t size,
                           std::shared_ptr<void> owner) {
    Tensor t(dtype, std::move(shape), std::string());
    t.external_ = data;
    t.external_size_ = size;
    t.owner_ = std::move(owner);
    return t;
  }

  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  const void* data() const { return owner_ != nullptr ? external_ : bytes_.data(); }
  void* mutable_data() { return owner_ != nullptr ? external_ : bytes_.data(); }
  size_t size_bytes() const { return owner_ != nullptr ? external_size_ : bytes_.size(); }
  // Whether the bytes are elsewhere (InMemoryOf); bytes() is then empty.
  bool in_shared_memory() const { return owner_ != nullptr; }
  const std::string& bytes() const { return bytes_; }
  // Moves the bytes out (a tensor in shared memory copies them out and lets go of its
  // region); the tensor keeps its dtype and shape but has no data.
  std::string release_bytes() {
    if (owner_ != nullptr) {
      std::string copy(static_cast<const char*>(external_), external_size_);
      owner_.reset();
      return copy;
    }
    return std::move(bytes_);
  }

  TensorView view() const { return TensorView{dtype_, shape_, data(), size_bytes()}; }
  MutableTensorView mutable_view() {
    return MutableTensorView{dtype_, shape_, mutable_data(), size_bytes()};
  }

 private:
  DType dtype_ = DType::kFloat32;
  std::vector<int64_t> shape_;
  std::string bytes_;
  void* external_ = nullptr;  // with owner_: the bytes
  size_t external_size_ = 0;
  std::shared_ptr<void> owner_;  // keeps external_ valid; null: the bytes are bytes_
};

// "[2, 3]"; "[]" for a 0-d shape. For messages and printing.
std::string ShapeToString(absl::Span<const int64_t> shape);

}  // namespace myops::client

#endif  // MYOPS_CLIENT_TENSOR_H_
