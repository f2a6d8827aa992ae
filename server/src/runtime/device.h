// Device names and their resolution against the devices a server serves. No torch here:
// detecting devices is the executor's job; this is parsing and matching only.
#pragma once

#include <string>
#include <vector>
#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"

namespace myops::server {

enum class DeviceKind { kCpu, kCuda };

struct Device {
  DeviceKind kind = DeviceKind::kCpu;
  int index = 0;             // CUDA ordinal; 0 for the CPU
  std::string Name() const;  // "cpu" or "cuda:N"
  bool operator==(const Device& o) const { return kind == o.kind && index == o.index; }
};

// What a request asked for: "" (any), "cpu", "cuda" (any GPU) or "cuda:N".
struct DeviceRequest {
  bool any_kind = true;
  DeviceKind kind = DeviceKind::kCpu;
  int index = -1;  // -1: any device of `kind`
};

// Parses a request's device string. INVALID_ARGUMENT for anything else, naming the
// accepted forms.
absl::StatusOr<DeviceRequest> ParseDeviceRequest(absl::string_view text);

// Parses a server's --devices value: "auto" is resolved by the caller, otherwise a
// comma-separated list of "cpu", "cuda" (all GPUs) and "cuda:N".
absl::StatusOr<std::vector<Device>> ParseDeviceList(absl::string_view text, int cuda_device_count);

// The devices a server computes on, in preference order. Immutable after construction;
// safe for concurrent use.
class DeviceSet {
 public:
  explicit DeviceSet(std::vector<Device> devices) : devices_(std::move(devices)) {}

  // The slot (index into devices()) that serves `request`. "" picks the first device;
  // "cuda" picks a GPU, spreading requests over GPUs by `hint`. FAILED_PRECONDITION
  // when this server does not serve the requested device, naming the ones it does.
  absl::StatusOr<int> Resolve(const DeviceRequest& request, unsigned hint = 0) const;

  const std::vector<Device>& devices() const { return devices_; }
  std::string Names() const;  // "cpu, cuda:0"

 private:
  std::vector<Device> devices_;
};

}  // namespace myops::server
