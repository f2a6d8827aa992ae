// The one definition of the myops operator namespace: every schema lives here.
// Kernels are registered per dispatch key in cpu/, cuda/, autograd/ and meta/.
// `pointwise`: each output element depends on the input element at the same index only
// (hosts may batch calls along dimension 0: the Triton backend's dynamic batching).
#include <torch/library.h>

TORCH_LIBRARY(myops, m) {
  m.def("scale_shift(Tensor x, float alpha, float beta) -> Tensor",
        {at::Tag::pt2_compliant_tag, at::Tag::pointwise});
  m.def("scale_shift_(Tensor(a!) x, float alpha, float beta) -> Tensor(a!)",
        {at::Tag::pt2_compliant_tag, at::Tag::pointwise});
  m.def("scale_shift.out(Tensor x, float alpha, float beta, *, Tensor(a!) out) -> Tensor(a!)",
        {at::Tag::pt2_compliant_tag, at::Tag::pointwise});
}
