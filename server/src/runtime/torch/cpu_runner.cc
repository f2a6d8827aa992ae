// The CPU runner: calls run boxed (runtime/torch/boxed_call.h) on the CPU, argument
// tensors wrapping the request's memory and result 0, where the front end gives a buffer
// (a response's, a shared memory region), written straight into it; and the wire dtype <->
// PyTorch dtype mapping.
#include <ATen/core/Tensor.h>
#include <c10/core/TensorImpl.h>
#include <c10/util/accumulate.h>

#include "runtime/torch/boxed_call.h"
#include "runtime/torch/runner.h"

namespace myops::server {
namespace {

class CpuRunner final : public DeviceRunner {
 public:
  void RunCall(const OpHandle& op, OpCall& call, int64_t* compute_ns) override {
    const auto t0 = std::chrono::steady_clock::now();
    RunBoxed(op, call, c10::Device(c10::kCPU));
    *compute_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0)
            .count();
  }
};

}  // namespace

c10::ScalarType ToScalarType(DType t) {
  switch (t) {
    case DType::kFloat32:
      return at::kFloat;
    case DType::kFloat64:
      return at::kDouble;
    case DType::kFloat16:
      return at::kHalf;
    case DType::kBFloat16:
      return at::kBFloat16;
    case DType::kInt8:
      return at::kChar;
    case DType::kInt16:
      return at::kShort;
    case DType::kInt32:
      return at::kInt;
    case DType::kInt64:
      return at::kLong;
    case DType::kUInt8:
      return at::kByte;
    case DType::kBool:
      return at::kBool;
  }
  // The codec admits only table values; anything else is a bug here, not a bad request.
  TORCH_CHECK(false, "no PyTorch dtype for wire dtype ", static_cast<int>(t));
}

at::Tensor WrapCpu(const void* data, const std::vector<int64_t>& shape, DType dtype) {
  // What at::from_blob makes (a non-resizable storage that never frees, a contiguous CPU
  // tensor; without autograd keys under InferenceMode), made directly: from_blob's
  // general path (TensorMaker) costs as much again per tensor. Shapes come checked by the
  // front ends (sizes >= 0, bytes within the limits).
  const caffe2::TypeMeta type = caffe2::TypeMeta::fromScalarType(ToScalarType(dtype));
  const size_t bytes = c10::multiply_integers(shape) * type.itemsize();
  c10::Storage storage(c10::Storage::use_byte_size_t(), bytes,
                       c10::DataPtr(const_cast<void*>(data), c10::Device(c10::kCPU)),
                       /*allocator=*/nullptr, /*resizable=*/false);
  at::Tensor t = at::detail::make_tensor<c10::TensorImpl>(
      std::move(storage), c10::DispatchKeySet(c10::DispatchKey::CPU), type);
  t.unsafeGetTensorImpl()->set_sizes_contiguous(shape);
  return t;
}

std::unique_ptr<DeviceRunner> MakeCpuRunner() { return std::make_unique<CpuRunner>(); }

}  // namespace myops::server
