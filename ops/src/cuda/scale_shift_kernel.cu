// CUDA kernels for myops::scale_shift, scale_shift_ and scale_shift.out.
//
// Every launcher follows the same order: checks, device guard, allocate, current stream,
// empty check, dtype dispatch, launch, launch check. The kernel is a grid-stride loop
// with int64_t indexing that moves 16-byte packs when both pointers are aligned.
// Strided inputs are made contiguous first, and a strided `out` receives a copy.
#include <ATen/Dispatch.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/OpMathType.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/native/Resize.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <algorithm>
#include <cstdint>

#include "checks.h"

namespace myops::cuda {
namespace {

constexpr int kThreads = 256;

template <typename scalar_t>
struct VecSize {
  static constexpr int value = 16 / sizeof(scalar_t);
};

template <typename scalar_t, int N>
struct alignas(sizeof(scalar_t) * N) Pack {
  scalar_t v[N];
};

template <typename scalar_t, typename opmath_t>
__device__ __forceinline__ scalar_t apply(scalar_t x, opmath_t a, opmath_t b) {
  return static_cast<scalar_t>(fma(a, static_cast<opmath_t>(x), b));
}

// x and y may alias (in-place): each element is read and written by the same thread.
template <typename scalar_t, typename opmath_t, bool kVectorized>
__global__ void scale_shift_kernel(const scalar_t* x, scalar_t* y, int64_t n, opmath_t a,
                                   opmath_t b) {
  constexpr int N = VecSize<scalar_t>::value;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  int64_t done = 0;
  if constexpr (kVectorized) {
    using P = Pack<scalar_t, N>;
    const int64_t packs = n / N;
    const P* xp = reinterpret_cast<const P*>(x);
    P* yp = reinterpret_cast<P*>(y);
    for (int64_t p = i; p < packs; p += stride) {
      P in = xp[p];
      P out;
#pragma unroll
      for (int k = 0; k < N; ++k) out.v[k] = apply(in.v[k], a, b);
      yp[p] = out;
    }
    done = packs * N;
  }
  for (int64_t e = done + i; e < n; e += stride) y[e] = apply(x[e], a, b);
}

// y = alpha * x + beta for contiguous x and y of equal numel (y may be x).
void launch(const at::Tensor& x, at::Tensor& y, double alpha, double beta) {
  const int64_t n = x.numel();
  if (n == 0) return;
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(
      at::kHalf, at::kBFloat16, x.scalar_type(), "scale_shift_cuda", [&] {
        using opmath_t = at::opmath_type<scalar_t>;
        constexpr int N = VecSize<scalar_t>::value;
        const auto* xp = x.const_data_ptr<scalar_t>();
        auto* yp = y.mutable_data_ptr<scalar_t>();
        const bool aligned =
            reinterpret_cast<uintptr_t>(xp) % 16 == 0 && reinterpret_cast<uintptr_t>(yp) % 16 == 0;
        const int64_t work = aligned ? std::max<int64_t>(n / N, 1) : n;
        const int64_t max_blocks =
            static_cast<int64_t>(at::cuda::getCurrentDeviceProperties()->multiProcessorCount) * 8;
        const auto blocks =
            static_cast<unsigned>(std::min((work + kThreads - 1) / kThreads, max_blocks));
        const auto a = static_cast<opmath_t>(alpha);
        const auto b = static_cast<opmath_t>(beta);
        if (aligned) {
          scale_shift_kernel<scalar_t, opmath_t, true>
              <<<blocks, kThreads, 0, stream>>>(xp, yp, n, a, b);
        } else {
          scale_shift_kernel<scalar_t, opmath_t, false>
              <<<blocks, kThreads, 0, stream>>>(xp, yp, n, a, b);
        }
        C10_CUDA_KERNEL_LAUNCH_CHECK();
      });
}

at::Tensor scale_shift_cuda(const at::Tensor& x, double alpha, double beta) {
  detail::check_input(x, "myops::scale_shift");
  const c10::cuda::CUDAGuard guard(x.device());
  const at::Tensor xc = x.contiguous();
  at::Tensor y = at::empty(x.sizes(), x.options().memory_format(at::MemoryFormat::Contiguous));
  launch(xc, y, alpha, beta);
  return y;
}

at::Tensor& scale_shift_inplace_cuda(at::Tensor& x, double alpha, double beta) {
  detail::check_input(x, "myops::scale_shift_");
  at::assert_no_internal_overlap(x);
  const c10::cuda::CUDAGuard guard(x.device());
  if (x.is_contiguous()) {
    launch(x, x, alpha, beta);
  } else {
    at::Tensor y = at::empty(x.sizes(), x.options().memory_format(at::MemoryFormat::Contiguous));
    launch(x.contiguous(), y, alpha, beta);
    x.copy_(y);
  }
  return x;
}

at::Tensor& scale_shift_out_cuda(const at::Tensor& x, double alpha, double beta, at::Tensor& out) {
  detail::check_out(x, out, "myops::scale_shift.out");
  const c10::cuda::CUDAGuard guard(x.device());
  at::native::resize_output(out, x.sizes());
  // After resizing: an empty `out` can grow into memory that x occupies (like the CPU
  // kernel's TensorIterator, which checks the resized output).
  at::assert_no_internal_overlap(out);
  at::assert_no_partial_overlap(out, x);
  const at::Tensor xc = x.contiguous();
  if (out.is_contiguous()) {
    launch(xc, out, alpha, beta);
  } else {
    at::Tensor y = at::empty(x.sizes(), x.options().memory_format(at::MemoryFormat::Contiguous));
    launch(xc, y, alpha, beta);
    out.copy_(y);
  }
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(myops, CUDA, m) {
  m.impl("scale_shift", &scale_shift_cuda);
  m.impl("scale_shift_", &scale_shift_inplace_cuda);
  m.impl("scale_shift.out", &scale_shift_out_cuda);
}

}  // namespace myops::cuda
