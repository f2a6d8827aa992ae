// A myops model's configuration as Triton hands it over (JSON of Triton's ModelConfig):
// what the backend reads from it, and how it completes a configuration that names only
// the operator (Triton's auto-complete). No Triton calls here: plain JSON, testable alone.
//
//   backend: "myops"
//   parameters { key: "op" value { string_value: "torchvision::roi_align" } }
//   parameters { key: "libraries" value { string_value: "/path/torchvision/_C.so" } }
//   parameters { key: "libpython" value { string_value: "/usr/lib/.../libpython3.11.so.1.0" } }
//
// or, for an exported program (an AOTInductor package made with myops.export.package;
// server/src/runtime/program.h), the package instead of "op":
//   parameters { key: "program" value { string_value: "/models/detector.pt2" } }
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "frontends/oip/args.h"

namespace myops::triton {

struct ModelConfig {
  std::string name;                    // the model's
  std::string op;                      // "namespace::name[.overload]"; or
  std::string program;                 // the .pt2 package's path (exactly one of the two)
  std::vector<std::string> libraries;  // operator libraries to load first, in order
  std::string libpython;               // for libraries that are Python extensions ("": guess)
  int64_t max_batch_size = 0;
  int instances = 0;  // CPU model instances (instance_group counts; 0: none given)
};

// INVALID_ARGUMENT naming the model and the parameter when neither or both of `op` and
// `program` are given, or a parameter is not a string_value.
absl::StatusOr<ModelConfig> ParseModelConfig(const nlohmann::json& config);

// Completes `config` for an operator described by `spec` (kserve::DescribeOp), as
// Triton's auto-complete asks: each input the spec has and the configuration does not list
// (by name) is added (FP32 [-1] for tensors, the protocol's datatypes and shapes for
// scalars and lists; scalar and list inputs optional, as they may come as request
// parameters instead), and so is each missing output. Listed ones stay as written (Triton
// checks a request's datatypes and ranks against them). So a configuration naming only
// the op serves 1-D tensors, and one that lists `{ name: "boxes" data_type: TYPE_FP32
// dims: [ -1, 4 ] }` sets that input. Returns whether it changed `config`.
bool AutoCompleteConfig(const server::kserve::ModelSpec& spec, nlohmann::json* config);

}  // namespace myops::triton
