// Running one bound call on the calling thread (see runtime/call_runner.h).
#include "runtime/call_runner.h"

#include <c10/core/InferenceMode.h>

#include <exception>

#include "absl/strings/str_cat.h"
#include "runtime/exception_status.h"
#include "runtime/torch/op_handles.h"
#include "runtime/torch/runner.h"

namespace myops::server {

absl::Status RunOnRunner(DeviceRunner& runner, const OpRegistry& registry, OpCall& call,
                         int64_t* compute_ns) {
  try {
    c10::InferenceMode inference_mode;
    runner.RunCall(registry.handles()->ops.at(static_cast<size_t>(call.op)), call, compute_ns);
    return absl::OkStatus();
  } catch (...) {
    return StatusFromException(std::current_exception(), /*operator_call=*/true);
  }
}

CallRunner::CallRunner(Device device, std::unique_ptr<DeviceRunner> runner)
    : device_(device), runner_(std::move(runner)) {}

CallRunner::~CallRunner() = default;

absl::StatusOr<std::unique_ptr<CallRunner>> CallRunner::Create(const Device& device) {
  std::unique_ptr<DeviceRunner> runner;
  try {
    runner = device.kind == DeviceKind::kCpu ? MakeCpuRunner() : MakeCudaRunner(device.index);
  } catch (...) {
    return absl::FailedPreconditionError(
        absl::StrCat("could not set up ", device.Name(),
                     " for serving: ", StatusFromException(std::current_exception()).message()));
  }
  return std::unique_ptr<CallRunner>(new CallRunner(device, std::move(runner)));
}

}  // namespace myops::server
