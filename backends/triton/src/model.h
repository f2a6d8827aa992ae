// One Triton model served by the myops backend: its configuration, the operator
// libraries it loaded, and the registry holding its one operator. Made at model load
// (TRITONBACKEND_ModelInitialize); immutable afterwards, so the model's instances share
// it from their own threads.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "frontends/oip/args.h"
#include "model_config.h"
#include "runtime/op_registry.h"
#include "triton_api.h"

namespace myops::triton {

class Model {
 public:
  // Reads the configuration, loads its libraries (once per process each; under a lock:
  // Triton may load models concurrently), finds the operator in PyTorch's operator table
  // and, when Triton's auto-complete is on, completes the configuration from its schema.
  // Errors name the model and the library or operator.
  static absl::StatusOr<std::unique_ptr<Model>> Create(TRITONBACKEND_Model* model);

  const ModelConfig& config() const { return config_; }
  const server::OpRegistry& registry() const { return *registry_; }
  int op() const { return op_; }
  const server::OpInfo& op_info() const { return registry_->ops()[static_cast<size_t>(op_)]; }
  // The op's output names (kserve::OutputNames) and all of them selected, in order
  // (kserve::SelectOutputs of none): made once, used per request.
  const std::vector<std::string>& output_names() const { return output_names_; }
  const std::vector<server::kserve::OutputRef>& all_outputs() const { return all_outputs_; }

 private:
  ModelConfig config_;
  std::shared_ptr<const server::OpRegistry> registry_;
  int op_ = -1;
  std::vector<std::string> output_names_;
  std::vector<server::kserve::OutputRef> all_outputs_;
};

}  // namespace myops::triton
