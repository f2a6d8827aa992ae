// Device runners: how one job is computed on one kind of device (torch-facing, private
// to the executor). A runner belongs to one worker thread (or, for the stateless CPU
// runner, is shared); RunCall may throw PyTorch exceptions, which the executor maps.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include "runtime/executor.h"
#include "runtime/torch/op_handles.h"
#include "runtime/value.h"

namespace myops::server {

class DeviceRunner {
 public:
  virtual ~DeviceRunner() = default;
  // Runs a generic call of `op` on this runner's device (RunBoxed); sets *compute_ns.
  virtual void RunCall(const OpHandle& op, OpCall& call, int64_t* compute_ns) = 0;
};

// Stateless, thread-safe: runs calls boxed on the CPU (runtime/torch/boxed_call.h).
std::unique_ptr<DeviceRunner> MakeCpuRunner();

// Owns one stream of GPU `index`'s pool. Defined in runtime/cuda_runner.cc in CUDA builds; in CPU
// builds it throws (no CUDA device can be configured there).
std::unique_ptr<DeviceRunner> MakeCudaRunner(int index);

// Makes the runner of one CUDA worker of GPU `index`; may throw (CUDA context or stream
// pool set-up). MakeCudaRunner in the server; tests pass fakes.
using CudaRunnerFactory = std::function<std::unique_ptr<DeviceRunner>(int index)>;

// The second half of Executor::Create, after device detection: creates every worker's
// runner on the calling thread (a factory's exception becomes FAILED_PRECONDITION, and no
// worker is started), then starts the workers. `options` must be complete (no zeros).
absl::StatusOr<std::unique_ptr<Executor>> StartExecutor(const ExecutorOptions& options,
                                                        std::vector<Device> devices,
                                                        RuntimeInfo info,
                                                        const CudaRunnerFactory& make_cuda_runner);

// Name and total memory of GPU `index`, and the CUDA version the build targets.
RuntimeInfo::DeviceInfo CudaDeviceInfo(int index);
std::string CudaBuildVersion();

// The PyTorch dtype of a wire dtype.
c10::ScalarType ToScalarType(DType dtype);

// Wraps a view as a tensor without copying (CPU memory).
at::Tensor WrapCpu(const void* data, const std::vector<int64_t>& shape, DType dtype);

}  // namespace myops::server
