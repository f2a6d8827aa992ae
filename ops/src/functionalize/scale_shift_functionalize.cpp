// Functionalization kernels for the mutating variants (scale_shift_, scale_shift.out),
// so torch.compile / AOTAutograd can trace them: the mutation is rewritten as the
// functional scale_shift followed by a replace of the mutated tensor, exactly as
// PyTorch's generated kernels do for ATen's own in-place and out= operators.
// (Custom operators that return an alias of a mutated input cannot use PyTorch's
// automatic functionalization, hence these explicit kernels.)
#include <ATen/FunctionalTensorWrapper.h>
#include <ATen/core/LegacyTypeDispatch.h>
#include <torch/library.h>

#include "checks.h"
#include "myops/ops.h"

namespace myops::functionalize {
namespace {

namespace impl = at::functionalization::impl;

// Syncs a functional tensor and returns the plain tensor underneath it.
at::Tensor unwrap(const at::Tensor& t) {
  if (!impl::isFunctionalTensor(t)) return t;
  impl::sync(t);
  return impl::from_functional_tensor(t);
}

// Makes `mutated` (a functional tensor) hold `value` from now on.
void assign(at::Tensor& mutated, const at::Tensor& value) {
  impl::replace_(mutated, value);
  impl::commit_update(mutated);
  impl::sync(mutated);
}

at::Tensor& scale_shift_inplace_functionalize(at::Tensor& x, double alpha, double beta) {
  at::Tensor x_ = unwrap(x);
  at::AutoDispatchSkipFunctionalize guard;
  if (!impl::isFunctionalTensor(x)) {
    myops::scale_shift_(x_, alpha, beta);
    return x;
  }
  assign(x, myops::scale_shift(x_, alpha, beta));
  return x;
}

at::Tensor& scale_shift_out_functionalize(const at::Tensor& x, double alpha, double beta,
                                          at::Tensor& out) {
  at::Tensor x_ = unwrap(x);
  at::Tensor out_ = unwrap(out);
  at::AutoDispatchSkipFunctionalize guard;
  if (!impl::isFunctionalTensor(out)) {
    myops::scale_shift_out(x_, alpha, beta, out_);
    return out;
  }
  detail::check_out(x_, out_, "myops::scale_shift.out");
  assign(out, myops::scale_shift(x_, alpha, beta));
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(myops, Functionalize, m) {
  m.impl("scale_shift_", &scale_shift_inplace_functionalize);
  m.impl("scale_shift.out", &scale_shift_out_functionalize);
}

}  // namespace myops::functionalize
