// Meta kernels: shapes, dtypes and strides only, for torch.compile, FakeTensor and
// export. They run the same argument checks as the real kernels.
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include "checks.h"

namespace myops::meta {
namespace {

at::Tensor scale_shift_meta(const at::Tensor& x, double /*alpha*/, double /*beta*/) {
  detail::check_input(x, "myops::scale_shift");
  // Symbolic sizes: under torch.export with a dynamic dimension the result keeps it
  // (x.sizes() would specialize the dimension to the example's value).
  return at::empty_symint(x.sym_sizes(), x.options().memory_format(at::MemoryFormat::Contiguous));
}

at::Tensor& scale_shift_inplace_meta(at::Tensor& x, double /*alpha*/, double /*beta*/) {
  detail::check_input(x, "myops::scale_shift_");
  return x;
}

at::Tensor& scale_shift_out_meta(const at::Tensor& x, double /*alpha*/, double /*beta*/,
                                 at::Tensor& out) {
  detail::check_out(x, out, "myops::scale_shift.out");
  at::native::resize_output_symint(out, x.sym_sizes());
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(myops, Meta, m) {
  m.impl("scale_shift", &scale_shift_meta);
  m.impl("scale_shift_", &scale_shift_inplace_meta);
  m.impl("scale_shift.out", &scale_shift_out_meta);
}

}  // namespace myops::meta
