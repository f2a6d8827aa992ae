// The torch side of exported programs (runtime/program.h): a loaded AOTInductor package,
// one compiled-model container per device it serves on. Private to the runtime's torch
// translation units.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <map>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/op_registry.h"
#include "runtime/program.h"

namespace torch::inductor {
class AOTIModelPackageLoader;
}

namespace myops::server {

// Thread-safe: Run may be called from any number of threads (each device's container
// hands a call one of its runners, waiting when all are busy). Immutable after Load.
class ProgramPackage {
 public:
  // Loads `spec`'s package for `placement` and describes it as a served callable. Every
  // failure is FAILED_PRECONDITION naming the package: unreadable, no "myops.signature"
  // metadata, an operator it calls that is not registered, compiled for a device kind
  // this server does not run.
  static absl::StatusOr<std::shared_ptr<const ProgramPackage>> Load(
      const ProgramSpec& spec, const ProgramPlacement& placement);
  ~ProgramPackage();

  // Runs the program on `device` (one it was loaded for) with `inputs` there, on the
  // current stream. Throws what the compiled code throws.
  std::vector<at::Tensor> Run(std::vector<at::Tensor> inputs, c10::Device device) const;
  // The registry's description of it (OpRegistry::Build lists it).
  const OpInfo& info() const { return info_; }

 private:
  ProgramPackage() = default;
  OpInfo info_;
  // By CUDA ordinal; -1 for the CPU.
  std::map<int, std::unique_ptr<torch::inductor::AOTIModelPackageLoader>> loaders_;
};

}  // namespace myops::server
