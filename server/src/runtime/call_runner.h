// Running one bound call on one device on the calling thread. The executor's workers run
// their jobs through RunOnRunner; hosts that bring their own threads (the Triton backend's
// model instances) hold a CallRunner each. Torch-free header.
#pragma once

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/device.h"
#include "runtime/op_registry.h"
#include "runtime/value.h"

namespace myops::server {

class DeviceRunner;  // runtime/torch/runner.h

// Runs `call` (bound to an op of `registry`, which must have been built by
// OpRegistry::Build) on `runner` under c10::InferenceMode; sets *compute_ns. The one
// place where exceptions from operator code are caught: they come back as their status
// (runtime/exception_status.h, as an operator call).
absl::Status RunOnRunner(DeviceRunner& runner, const OpRegistry& registry, OpCall& call,
                         int64_t* compute_ns);

// One device's runner, for one thread at a time (on CUDA it owns one stream of the
// device's pool and runs under CUDAGuard + CUDAStreamGuard; not thread-safe). Owned by the
// host's thread or per-thread state (a Triton model instance).
class CallRunner {
 public:
  // FAILED_PRECONDITION when the device cannot be set up (no CUDA in this build, no such
  // GPU, a CUDA context that fails).
  static absl::StatusOr<std::unique_ptr<CallRunner>> Create(const Device& device);
  ~CallRunner();

  const Device& device() const { return device_; }
  absl::Status Run(const OpRegistry& registry, OpCall& call, int64_t* compute_ns) {
    return RunOnRunner(*runner_, registry, call, compute_ns);
  }

 private:
  CallRunner(Device device, std::unique_ptr<DeviceRunner> runner);
  Device device_;
  std::unique_ptr<DeviceRunner> runner_;
};

}  // namespace myops::server
