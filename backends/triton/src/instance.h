// One Triton model instance of a myops model: the runner of its device (KIND_CPU: the
// CPU; KIND_GPU: its GPU, with a stream of its own) and the execution of the requests
// Triton hands it. Triton calls Execute on the instance's own thread, one batch at a
// time, so an instance needs no lock; its runner is used by that thread only.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model.h"
#include "runtime/call_runner.h"
#include "triton_api.h"

namespace myops::triton {

class Instance {
 public:
  // FAILED_PRECONDITION when its device cannot be set up (a GPU instance in a build
  // without CUDA, a GPU that is not there).
  static absl::StatusOr<std::unique_ptr<Instance>> Create(TRITONBACKEND_ModelInstance* instance,
                                                          const Model& model);

  // Answers every request (one final response each, an error response for a request that
  // fails), reports Triton's statistics, and releases the requests. Never fails as a
  // whole: each request's error goes to its own client. With max_batch_size > 0, the
  // requests Triton hands over together run as one call where that is sound (RunBatch).
  void Execute(TRITONBACKEND_Request** requests, uint32_t count);

 private:
  Instance(TRITONBACKEND_ModelInstance* instance, const Model& model,
           std::unique_ptr<server::CallRunner> runner)
      : triton_(instance), model_(model), runner_(std::move(runner)) {}

  struct Pending;
  absl::Status RunOne(Pending& p);
  bool RunBatch(const std::vector<Pending*>& batch);

  TRITONBACKEND_ModelInstance* triton_;
  const Model& model_;  // outlives its instances (Triton finalizes instances first)
  std::unique_ptr<server::CallRunner> runner_;
};

}  // namespace myops::triton
