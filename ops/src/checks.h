// Argument checks shared by every backend of scale_shift (CPU, CUDA, Meta), so that each
// rejects the same inputs with the same messages.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>

namespace myops::detail {

inline bool is_supported_dtype(c10::ScalarType t) {
  return t == at::kFloat || t == at::kDouble || t == at::kHalf || t == at::kBFloat16;
}

// x: a float32/float64/float16/bfloat16 tensor. Throws c10::TypeError otherwise.
inline void check_input(const at::Tensor& x, const char* op) {
  TORCH_CHECK_VALUE(x.defined(), op, ": expected a defined tensor for 'x'");
  TORCH_CHECK_TYPE(is_supported_dtype(x.scalar_type()), op, ": unsupported dtype ", x.scalar_type(),
                   " for 'x'; expected one of Float, Double, Half, BFloat16");
}

// out: same dtype and device as x (no type promotion, no cross-device writes).
inline void check_out(const at::Tensor& x, const at::Tensor& out, const char* op) {
  check_input(x, op);
  TORCH_CHECK_VALUE(out.defined(), op, ": expected a defined tensor for 'out'");
  TORCH_CHECK_TYPE(out.scalar_type() == x.scalar_type(), op, ": 'out' has dtype ",
                   out.scalar_type(), " but 'x' has dtype ", x.scalar_type(), "; they must match");
  TORCH_CHECK_VALUE(out.device() == x.device(), op, ": 'out' is on ", out.device(),
                    " but 'x' is on ", x.device(), "; they must be on the same device");
}

}  // namespace myops::detail
