// Autograd kernels, in C++ so that they work without Python (the server runs none).
//
// scale_shift: d/dx (alpha * x + beta) = alpha, so grad_x = scale_shift(grad, alpha, 0).
// The backward itself calls the differentiable op, so double backward works.
// scale_shift_ and scale_shift.out: like ATen's out= functions they are not
// differentiable; the not-implemented fallbacks raise a clear error on backward and
// keep version counters right (ADInplaceOrView) for mutated tensors.
#include <torch/autograd.h>
#include <torch/csrc/autograd/autograd_not_implemented_fallback.h>
#include <torch/library.h>

#include "myops/ops.h"

namespace myops::autograd {
namespace {

class ScaleShiftFunction final : public torch::autograd::Function<ScaleShiftFunction> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x,
                            double alpha, double beta) {
    ctx->saved_data["alpha"] = alpha;
    at::AutoDispatchBelowADInplaceOrView guard;
    return myops::scale_shift(x, alpha, beta);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const double alpha = ctx->saved_data["alpha"].toDouble();
    return {myops::scale_shift(grads[0], alpha, 0.0), at::Tensor(), at::Tensor()};
  }
};

at::Tensor scale_shift_autograd(const at::Tensor& x, double alpha, double beta) {
  return ScaleShiftFunction::apply(x, alpha, beta);
}

}  // namespace

TORCH_LIBRARY_IMPL(myops, Autograd, m) {
  m.impl("scale_shift", &scale_shift_autograd);
  m.impl("scale_shift_", torch::autograd::autogradNotImplementedFallback());
  m.impl("scale_shift.out", torch::autograd::autogradNotImplementedFallback());
}

TORCH_LIBRARY_IMPL(myops, ADInplaceOrView, m) {
  m.impl("scale_shift_", torch::autograd::autogradNotImplementedInplaceOrViewFallback());
  m.impl("scale_shift.out", torch::autograd::autogradNotImplementedInplaceOrViewFallback());
}

}  // namespace myops::autograd
