// One Triton model served by the myops backend: its configuration, the operator
// libraries it loaded, and the registry holding its one operator. Made at model load
// (TRITONBACKEND_ModelInitialize); immutable afterwards, so the model's instances share
// it from their own threads.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
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

 private:
  ModelConfig config_;
  std::shared_ptr<const server::OpRegistry> registry_;
  int op_ = -1;
};

}  // namespace myops::triton
