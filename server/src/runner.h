// Device runners: how one job is computed on one kind of device (torch-facing, private
// to the executor). A runner belongs to one worker thread (or, for the stateless CPU
// runner, is shared); Run may throw PyTorch exceptions, which the executor maps.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <ATen/core/Tensor.h>

#include "executor.h"

namespace myops::server {

class DeviceRunner {
 public:
  virtual ~DeviceRunner() = default;
  // Writes alpha * input + beta into job.output; sets *compute_ns.
  virtual void Run(const Job& job, int64_t* compute_ns) = 0;
};

// Stateless, thread-safe: computes straight into the output view via scale_shift.out.
std::unique_ptr<DeviceRunner> MakeCpuRunner();

// Owns one stream of GPU `index`'s pool. Defined in cuda_runner.cc in CUDA builds; in CPU
// builds it throws (no CUDA device can be configured there).
std::unique_ptr<DeviceRunner> MakeCudaRunner(int index);

// Name and total memory of GPU `index`, and the CUDA version the build targets.
RuntimeInfo::DeviceInfo CudaDeviceInfo(int index);
std::string CudaBuildVersion();

// The PyTorch dtype of a wire dtype.
c10::ScalarType ToScalarType(DType dtype);

// Wraps a view as a tensor without copying (CPU memory).
at::Tensor WrapCpu(const void* data, const std::vector<int64_t>& shape, DType dtype);

}  // namespace myops::server
