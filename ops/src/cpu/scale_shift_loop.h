// The vectorized inner loop of the CPU kernel, compiled once per CPU capability
// (DEFAULT, AVX2, AVX512; see ops/CMakeLists.txt) and chosen at run time.
#pragma once

#include <ATen/TensorIterator.h>

namespace myops::cpu {

// Computes out = alpha * in + beta over a 1-output/1-input TensorIterator whose dtype is
// float32/float64/float16/bfloat16. Parallel over large tensors (at::parallel_for).
using ScaleShiftLoopFn = void (*)(at::TensorIteratorBase& iter, double alpha, double beta);

namespace DEFAULT {
void scale_shift_loop(at::TensorIteratorBase& iter, double alpha, double beta);
}
namespace AVX2 {
void scale_shift_loop(at::TensorIteratorBase& iter, double alpha, double beta);
}
namespace AVX512 {
void scale_shift_loop(at::TensorIteratorBase& iter, double alpha, double beta);
}

}  // namespace myops::cpu
