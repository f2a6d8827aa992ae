// CPU-only builds: the CUDA runner entry points exist but can never be reached, since
// device detection finds no GPU without CUDA support.
#include <stdexcept>

#include "runtime/torch/runner.h"

namespace myops::server {

std::unique_ptr<DeviceRunner> MakeCudaRunner(int) {
  throw std::logic_error("myops-server was built without CUDA support");
}
RuntimeInfo::DeviceInfo CudaDeviceInfo(int index) {
  return {"cuda:" + std::to_string(index), "", 0};
}
std::string CudaBuildVersion() { return ""; }

}  // namespace myops::server
