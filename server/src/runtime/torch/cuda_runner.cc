// The CUDA runner (built only with MYOPS_WITH_CUDA): one stream from the device's pool
// per worker, under CUDAGuard and CUDAStreamGuard; calls run boxed with their tensors
// copied to the device and their results back on that stream, which is synchronized
// before the response is encoded.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>

#include <chrono>

#include "absl/strings/str_cat.h"
#include "runtime/torch/boxed_call.h"
#include "runtime/torch/runner.h"

namespace myops::server {
namespace {

class CudaRunner final : public DeviceRunner {
 public:
  explicit CudaRunner(int index)
      : index_(static_cast<c10::DeviceIndex>(index)),
        stream_(c10::cuda::getStreamFromPool(/*isHighPriority=*/false, index_)) {}

  // Arguments copied to the device and results back on this worker's stream (RunBoxed),
  // timed by the wall clock up to the stream's synchronization.
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
