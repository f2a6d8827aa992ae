// The CUDA runner (built only with MYOPS_WITH_CUDA): one stream from the device's pool
// per worker; pinned staging buffers (PyTorch's caching host allocator) so that both
// copies are asynchronous on that stream; CUDA events time copy + kernel + copy, and the
// wall clock the two host copies into and out of staging; the stream is synchronized
// before the response is encoded.
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "myops/ops.h"
#include "runtime/torch/boxed_call.h"
#include "runtime/torch/runner.h"

namespace myops::server {
namespace {

class CudaRunner final : public DeviceRunner {
 public:
  explicit CudaRunner(int index)
      : index_(static_cast<c10::DeviceIndex>(index)),
        stream_(c10::cuda::getStreamFromPool(/*isHighPriority=*/false, index_)) {}

  void Run(const Job& job, int64_t* compute_ns) override {
    // Nothing to compute or copy; an empty pinned tensor has no storage, and memcpy with a
    // null pointer is undefined even for 0 bytes.
    if (job.input.bytes == 0) {
      *compute_ns = 0;
      return;
    }
    const c10::cuda::CUDAGuard device_guard(index_);
    const c10::cuda::CUDAStreamGuard stream_guard(stream_);
    const at::Tensor request = WrapCpu(job.input.data, job.input.shape, job.input.dtype);
    const auto pinned = request.options().pinned_memory(true);
    at::Tensor host_in = at::empty(job.input.shape, pinned);
    at::Tensor host_out = at::empty(job.input.shape, pinned);
    const auto copy_in_start = std::chrono::steady_clock::now();
    std::memcpy(host_in.data_ptr(), job.input.data, static_cast<size_t>(job.input.bytes));
    const auto copy_in = std::chrono::steady_clock::now() - copy_in_start;

    at::cuda::CUDAEvent start(cudaEventDefault), stop(cudaEventDefault);
    start.record(stream_);
    at::Tensor dev_in = at::empty(job.input.shape, request.options().device(at::kCUDA, index_));
    dev_in.copy_(host_in, /*non_blocking=*/true);
    at::Tensor dev_out = myops::scale_shift(dev_in, job.alpha, job.beta);
    host_out.copy_(dev_out, /*non_blocking=*/true);
    stop.record(stream_);
    stream_.synchronize();
    const auto copy_out_start = std::chrono::steady_clock::now();
    std::memcpy(job.output.data, host_out.data_ptr(), static_cast<size_t>(job.output.bytes));
    const auto host_copies = copy_in + (std::chrono::steady_clock::now() - copy_out_start);
    *compute_ns = static_cast<int64_t>(static_cast<double>(start.elapsed_time(stop)) * 1e6) +
                  std::chrono::duration_cast<std::chrono::nanoseconds>(host_copies).count();
  }

  // Generic calls: arguments copied to the device and results back on this worker's
  // stream (RunBoxed), timed by the wall clock up to the stream's synchronization.
  void RunCall(const OpHandle& op, OpCall& call, int64_t* compute_ns) override {
    const c10::cuda::CUDAGuard device_guard(index_);
    const c10::cuda::CUDAStreamGuard stream_guard(stream_);
    const auto start = std::chrono::steady_clock::now();
    RunBoxed(op, call, c10::Device(c10::kCUDA, index_));
    stream_.synchronize();
    *compute_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now() - start)
                      .count();
  }

 private:
  c10::DeviceIndex index_;
  c10::cuda::CUDAStream stream_;
};

}  // namespace

std::unique_ptr<DeviceRunner> MakeCudaRunner(int index) {
  return std::make_unique<CudaRunner>(index);
}

RuntimeInfo::DeviceInfo CudaDeviceInfo(int index) {
  const cudaDeviceProp* p = at::cuda::getDeviceProperties(static_cast<c10::DeviceIndex>(index));
  return {absl::StrCat("cuda:", index), absl::StrCat(p->name, " (sm_", p->major, p->minor, ")"),
          static_cast<int64_t>(p->totalGlobalMem)};
}

std::string CudaBuildVersion() {
  return absl::StrCat(CUDART_VERSION / 1000, ".", (CUDART_VERSION % 1000) / 10);
}

}  // namespace myops::server
