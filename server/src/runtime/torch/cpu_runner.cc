// The CPU runner: calls run boxed (runtime/torch/boxed_call.h) on the CPU, argument
// tensors wrapping the request's memory and result 0, where the front end gives a buffer
// (a response's, a shared memory region), written straight into it; and the wire dtype <->
// PyTorch dtype mapping.
#include <ATen/ops/from_blob.h>

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
  // from_blob never frees; the tensor is read-only in practice for inputs.
  return at::from_blob(const_cast<void*>(data), shape,
                       at::TensorOptions().dtype(ToScalarType(dtype)));
}

std::unique_ptr<DeviceRunner> MakeCpuRunner() { return std::make_unique<CpuRunner>(); }

}  // namespace myops::server
