// CPU kernels for myops::scale_shift, scale_shift_ and scale_shift.out.
//
// All three run the capability-specific vectorized loop: over the flat elements when input
// and output are contiguous tensors of one shape (no iterator to build: what small tensors
// need), else over a TensorIterator (any input strides; output contiguous unless a
// strided `out` is given).
#include <ATen/MemoryOverlap.h>
#include <ATen/Parallel.h>
#include <ATen/TensorIterator.h>
#include <ATen/Version.h>
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include "checks.h"
#include "cpu/scale_shift_loop.h"

namespace myops::cpu {
namespace {

// Picks the widest loop this CPU (and ATEN_CPU_CAPABILITY, when set) allows; once.
struct Loops {
  ScaleShiftLoopFn iterator;
  ScaleShiftContiguousFn contiguous;
};

// The loops compiled for the CPU's capability, chosen once.
const Loops& loops() {
  static const Loops chosen = [] {
    const std::string cap = at::get_cpu_capability();
    if (cap == "AVX512") return Loops{&AVX512::scale_shift_loop, &AVX512::scale_shift_contiguous};
    if (cap == "AVX2") return Loops{&AVX2::scale_shift_loop, &AVX2::scale_shift_contiguous};
    return Loops{&DEFAULT::scale_shift_loop, &DEFAULT::scale_shift_contiguous};
  }();
  return chosen;
}

void run(at::Tensor& out, const at::Tensor& x, double alpha, double beta) {
  if (out.is_contiguous() && x.is_contiguous() && out.sizes().equals(x.sizes()) &&
      out.scalar_type() == x.scalar_type()) {
    // Contiguous and of one shape: the overlap checks TensorIterator would make, then one
    // flat loop (split over threads for large tensors).
    at::assert_no_internal_overlap(out);
    at::assert_no_partial_overlap(out, x);
    auto* to = static_cast<char*>(out.data_ptr());
    const auto* from = static_cast<const char*>(x.const_data_ptr());
    const int64_t item = static_cast<int64_t>(x.element_size());
    const c10::ScalarType dtype = x.scalar_type();
    const ScaleShiftContiguousFn fn = loops().contiguous;
    const int64_t n = x.numel();
    if (n <= at::internal::GRAIN_SIZE) {  // one thread's share: no pool to ask
      fn(to, from, n, dtype, alpha, beta);
      return;
    }
    at::parallel_for(0, n, at::internal::GRAIN_SIZE, [&](int64_t begin, int64_t end) {
      fn(to + begin * item, from + begin * item, end - begin, dtype, alpha, beta);
    });
    return;
  }
  // Checks memory overlap (internal and partial) and broadcasting like ATen's unary ops.
  auto iter = at::TensorIteratorConfig()
                  .add_output(out)
                  .add_const_input(x)
                  .check_all_same_dtype(true)
                  .resize_outputs(false)
                  .build();
  if (iter.numel() == 0) return;
  loops().iterator(iter, alpha, beta);
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
  // resize_output does nothing to an `out` of x's sizes (the usual case): not asked then.
  if (!out.sizes().equals(x.sizes())) at::native::resize_output(out, x.sizes());
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
