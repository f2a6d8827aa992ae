// The vectorized inner loop of the CPU kernel, compiled once per CPU capability
// (DEFAULT, AVX2, AVX512; see ops/CMakeLists.txt) and chosen at run time.
#pragma once

#include <ATen/TensorIterator.h>

namespace myops::cpu {

// Computes out = alpha * in + beta over a 1-output/1-input TensorIterator whose dtype is
// float32/float64/float16/bfloat16. Parallel over large tensors (at::parallel_for).
using ScaleShiftLoopFn = void (*)(at::TensorIteratorBase& iter, double alpha, double beta);

// The same over `n` contiguous elements of `dtype` (one of those four) from `in` to `out`
// (which may be `in` itself, never partly overlapping it), serially, with the results the
// TensorIterator loop gives: the fast path for contiguous tensors, where building an
// iterator would cost more than a small tensor's arithmetic.
using ScaleShiftContiguousFn = void (*)(void* out, const void* in, int64_t n, c10::ScalarType dtype,
                                        double alpha, double beta);

#define MYOPS_SCALE_SHIFT_LOOPS(cap)                                                       \
  namespace cap {                                                                          \
  void scale_shift_loop(at::TensorIteratorBase& iter, double alpha, double beta);          \
  void scale_shift_contiguous(void* out, const void* in, int64_t n, c10::ScalarType dtype, \
                              double alpha, double beta);                                  \
  }
MYOPS_SCALE_SHIFT_LOOPS(DEFAULT)
MYOPS_SCALE_SHIFT_LOOPS(AVX2)
MYOPS_SCALE_SHIFT_LOOPS(AVX512)
#undef MYOPS_SCALE_SHIFT_LOOPS

}  // namespace myops::cpu
