// Exported programs served beside operators: AOTInductor packages (.pt2, made by
// torch.export + torch._inductor.aoti_compile_and_package) loaded with --program
// NAME=PATH. A program is a served callable of the registry (OpInfo::program): tensors in,
// tensors out, each with the dtype and shape ranges its export fixed. Those come from the
// package's metadata key "myops.signature", which myops.export.package (ops/python/myops)
// writes; BindArguments checks every call against it, since the compiled code trusts its
// inputs' shapes. Torch-free: the loading is runtime/torch/program.cc.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "myops/common/dtype.h"
#include "runtime/device.h"

namespace myops::server {

struct OpInfo;  // runtime/op_registry.h
struct OpCall;  // runtime/value.h

// The dtype and shape a program fixes for one of its tensors: each dimension's range,
// min == max for a static one, max -1 for no upper bound; dimensions of one `symbol` (the
// exporter's name; "" for static ones) have one size within a call.
struct TensorSignature {
  struct Dim {
    int64_t min = 0;
    int64_t max = -1;
    std::string symbol;
    bool is_static() const { return min == max; }
  };
  DType dtype = DType::kFloat32;
  std::vector<Dim> dims;
  std::string ToString() const;  // "float32[2..64, 3, 8, 8]"; -1: any size
};

// One --program flag: NAME=PATH.
struct ProgramSpec {
  std::string name;
  std::string path;
};

// NAME is 1-64 letters, digits, '_' or '-' (no "::": it cannot shadow an operator);
// INVALID_ARGUMENT saying what is wrong otherwise.
absl::StatusOr<ProgramSpec> ParseProgramSpec(absl::string_view text);

// Where programs are loaded: each of `devices` of the package's kind (cpu, or every
// configured GPU for a CUDA package), with `runners` compiled-model instances per device
// (calls beyond that wait for one; the CPU workers' count).
struct ProgramPlacement {
  std::vector<Device> devices = {Device{}};
  int runners = 1;
};

// What the package's "myops.signature" metadata says (JSON, myops.export.package):
// {"inputs": [{"name", "dtype", "shape": [3, {"min", "max", "symbol"}, ...]}],
//  "outputs": [{"name", "dtype", "shape": [4, -1, ...]}], "ops": ["ns::op", ...]}.
struct ProgramSignature {
  struct Tensor {
    std::string name;
    TensorSignature signature;
  };
  std::vector<Tensor> inputs, outputs;
  std::vector<std::string> ops;  // the operators the program calls (besides aten's)
};
// INVALID_ARGUMENT saying which field is wrong.
absl::StatusOr<ProgramSignature> ParseProgramSignature(absl::string_view json);

// Checks a call bound to `program` (every argument a tensor; called by BindArguments
// once they are bound) against its signature: INVALID_ARGUMENT naming the input and what was
// expected, for a wrong dtype, rank, static size, a size outside a dynamic dimension's range, or
// sizes that differ where the export made them one.
absl::Status CheckProgramInputs(const OpInfo& program, const OpCall& call);

}  // namespace myops::server
