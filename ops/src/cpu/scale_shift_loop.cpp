// Vectorized CPU loop for scale_shift. This file is compiled once per CPU capability with
// CPU_CAPABILITY set (DEFAULT, AVX2, AVX512) and the matching -m flags, like ATen's own
// kernels in ATen/native/cpu; the namespace below is named after that capability.
//
// float16/bfloat16 are widened to float, combined with one fused multiply-add, and rounded
// once; float32/float64 use fmadd in their own precision.
#include "cpu/scale_shift_loop.h"

#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/cpu/vec/functional.h>
#include <ATen/cpu/vec/vec.h>
#include <ATen/native/cpu/Loops.h>

#include <cmath>
#include <type_traits>

namespace myops::cpu::CPU_CAPABILITY {
namespace {

using at::vec::Vectorized;

// alpha * x + beta on one vector, with a single rounding for reduced-precision types.
template <typename scalar_t>
Vectorized<scalar_t> fma_vec(const Vectorized<at::opmath_type<scalar_t>>& a, Vectorized<scalar_t> x,
                             const Vectorized<at::opmath_type<scalar_t>>& b) {
  if constexpr (std::is_same_v<scalar_t, at::opmath_type<scalar_t>>) {
    return at::vec::fmadd(a, x, b);
  } else {
    auto [lo, hi] = at::vec::convert_to_float<scalar_t>(x);
    return at::vec::convert_from_float<scalar_t>(at::vec::fmadd(a, lo, b),
                                                 at::vec::fmadd(a, hi, b));
  }
}

// The scalar form, which the loops use for elements that do not fill a vector.
template <typename scalar_t>
scalar_t fma_one(at::opmath_type<scalar_t> a, scalar_t x, at::opmath_type<scalar_t> b) {
  return static_cast<scalar_t>(std::fma(a, static_cast<at::opmath_type<scalar_t>>(x), b));
}

}  // namespace

void scale_shift_loop(at::TensorIteratorBase& iter, double alpha, double beta) {
  AT_DISPATCH_FLOATING_TYPES_AND2(
      at::kHalf, at::kBFloat16, iter.common_dtype(), "scale_shift_cpu", [&] {
        using opmath_t = at::opmath_type<scalar_t>;
        using Vec = at::vec::Vectorized<scalar_t>;
        using OpVec = at::vec::Vectorized<opmath_t>;
        const auto a = static_cast<opmath_t>(alpha);
        const auto b = static_cast<opmath_t>(beta);
        const OpVec va(a);
        const OpVec vb(b);
        at::native::cpu_kernel_vec(
            iter, [a, b](scalar_t x) -> scalar_t { return fma_one(a, x, b); },
            [va, vb](Vec x) -> Vec { return fma_vec<scalar_t>(va, x, vb); });
      });
}

void scale_shift_contiguous(void* out, const void* in, int64_t n, c10::ScalarType dtype,
                            double alpha, double beta) {
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, dtype, "scale_shift_cpu", [&] {
    using opmath_t = at::opmath_type<scalar_t>;
    using Vec = Vectorized<scalar_t>;
    const auto a = static_cast<opmath_t>(alpha);
    const auto b = static_cast<opmath_t>(beta);
    const Vectorized<opmath_t> va(a);
    const Vectorized<opmath_t> vb(b);
    const auto* x = static_cast<const scalar_t*>(in);
    auto* y = static_cast<scalar_t*>(out);
    // Two vectors a step and the rest one by one, as ATen's vectorized loop splits the
    // elements: every element rounds as it would there.
    constexpr int64_t kStep = 2 * Vec::size();
    int64_t i = 0;
    for (; i + kStep <= n; i += kStep) {
      fma_vec<scalar_t>(va, Vec::loadu(x + i), vb).store(y + i);
      fma_vec<scalar_t>(va, Vec::loadu(x + i + Vec::size()), vb).store(y + i + Vec::size());
    }
    for (; i < n; ++i) y[i] = fma_one(a, x[i], b);
  });
}

}  // namespace myops::cpu::CPU_CAPABILITY
