// CPU kernels for myops::scale_shift, scale_shift_ and scale_shift.out.
//
// All three build a TensorIterator (any input strides; output contiguous unless a
// strided `out` is given) and run the capability-specific vectorized loop.
#include <ATen/TensorIterator.h>
#include <ATen/Version.h>
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include "checks.h"
#include "cpu/scale_shift_loop.h"

namespace myops::cpu {
namespace {

// Picks the widest loop this CPU (and ATEN_CPU_CAPABILITY, when set) allows; once.
ScaleShiftLoopFn select_loop() {
  static const ScaleShiftLoopFn fn = [] {
    const std::string cap = at::get_cpu_capability();
    if (cap == "AVX512") return &AVX512::scale_shift_loop;
    if (cap == "AVX2") return &AVX2::scale_shift_loop;
    return &DEFAULT::scale_shift_loop;
  }();
  return fn;
}

void run(at::Tensor& out, const at::Tensor& x, double alpha, double beta) {
  // Checks memory overlap (internal and partial) and broadcasting like ATen's unary ops.
  auto iter = at::TensorIteratorConfig()
                  .add_output(out)
                  .add_const_input(x)
                  .check_all_same_dtype(true)
                  .resize_outputs(false)
                  .build();
  if (iter.numel() == 0) return;
  select_loop()(iter, alpha, beta);
}

at::Tensor scale_shift_cpu(const at::Tensor& x, double alpha, double beta) {
  detail::check_input(x, "myops::scale_shift");
  at::Tensor out = at::empty(x.sizes(), x.options().memory_format(at::MemoryFormat::Contiguous));
  run(out, x, alpha, beta);
  return out;
}

at::Tensor& scale_shift_inplace_cpu(at::Tensor& x, double alpha, double beta) {
  detail::check_input(x, "myops::scale_shift_");
  run(x, x, alpha, beta);
  return x;
}

at::Tensor& scale_shift_out_cpu(const at::Tensor& x, double alpha, double beta, at::Tensor& out) {
  detail::check_out(x, out, "myops::scale_shift.out");
  at::native::resize_output(out, x.sizes());
  run(out, x, alpha, beta);
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(myops, CPU, m) {
  m.impl("scale_shift", &scale_shift_cpu);
  m.impl("scale_shift_", &scale_shift_inplace_cpu);
  m.impl("scale_shift.out", &scale_shift_out_cpu);
}

}  // namespace myops::cpu
