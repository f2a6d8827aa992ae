// libtriton_myops.so: the entry points Triton calls (TRITONBACKEND_*). Each one is a
// Boundary (errors.h): statuses become TRITONSERVER_Errors and no exception reaches
// Triton. Ownership: Triton owns the model and instance objects; the backend hangs its own
// state on them (a Model per model, an Instance per instance) and deletes it in the
// matching Finalize, which Triton calls after the instances of a model are finalized.
#include <cstdint>
#include <cstdlib>
#include <memory>

#include "absl/strings/str_cat.h"
#include "errors.h"
#include "instance.h"
#include "model.h"
#include "triton_api.h"

namespace myops::triton {
namespace {

absl::Status CheckApiVersion() {
  uint32_t major = 0, minor = 0;
  if (absl::Status s = TakeTritonError(TRITONBACKEND_ApiVersion(&major, &minor)); !s.ok()) {
    return s;
  }
  if (major != MYOPS_TRITONBACKEND_API_MAJOR || minor < MYOPS_TRITONBACKEND_API_MINOR) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the myops backend needs Triton's backend API ", MYOPS_TRITONBACKEND_API_MAJOR, ".",
        MYOPS_TRITONBACKEND_API_MINOR, " or a later 1.x; this Triton has ", major, ".", minor));
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace myops::triton

using myops::triton::Boundary;
using myops::triton::Instance;
using myops::triton::Model;
using myops::triton::TakeTritonError;

extern "C" {

MYOPS_TRITON_EXPORT TRITONSERVER_Error* TRITONBACKEND_Initialize(TRITONBACKEND_Backend* backend) {
  return Boundary("myops backend initialization", [&] {
    // An exported program's compiled code checks its inputs against the shapes it was
    // compiled for only with this set (read once, at a program's first call). A package's
    // signature record is user data: one that contradicts the code would let a request the
    // record accepts make the code read past its input, in Triton's process. Set before any
    // model of this backend loads (setenv races getenv, so as early as the backend can); an
    // explicit AOTI_RUNTIME_CHECK_INPUTS=0 in Triton's environment wins. myops-server sets
    // it the same way in main.cc.
    setenv("AOTI_RUNTIME_CHECK_INPUTS", "1", /*overwrite=*/0);
    absl::Status s = myops::triton::CheckApiVersion();
    if (s.ok()) {
      const char* name = "";
      TakeTritonError(TRITONBACKEND_BackendName(backend, &name)).IgnoreError();
      myops::triton::Log(
          TRITONSERVER_LOG_INFO,
          absl::StrCat("myops: backend '", name, "' ready (backend API ",
                       MYOPS_TRITONBACKEND_API_MAJOR, ".", MYOPS_TRITONBACKEND_API_MINOR, ")"));
    }
    return s;
  });
}

MYOPS_TRITON_EXPORT TRITONSERVER_Error* TRITONBACKEND_Finalize(TRITONBACKEND_Backend*) {
  return nullptr;  // libraries stay loaded for the life of the process
}

MYOPS_TRITON_EXPORT TRITONSERVER_Error* TRITONBACKEND_ModelInitialize(TRITONBACKEND_Model* model) {
  return Boundary("myops model load", [&] {
    auto state = Model::Create(model);
    if (!state.ok()) return state.status();
    absl::Status s = TakeTritonError(TRITONBACKEND_ModelSetState(model, state->get()));
    if (s.ok()) state->release();  // owned by the model now; ModelFinalize deletes it
    return s;
  });
}

MYOPS_TRITON_EXPORT TRITONSERVER_Error* TRITONBACKEND_ModelFinalize(TRITONBACKEND_Model* model) {
  return Boundary("myops model unload", [&] {
    void* state = nullptr;
    absl::Status s = TakeTritonError(TRITONBACKEND_ModelState(model, &state));
    delete static_cast<Model*>(state);
    return s;
  });
}

MYOPS_TRITON_EXPORT TRITONSERVER_Error* TRITONBACKEND_ModelInstanceInitialize(
    TRITONBACKEND_ModelInstance* instance) {
  return Boundary("myops model instance load", [&] {
    TRITONBACKEND_Model* model = nullptr;
    void* model_state = nullptr;
    if (absl::Status s = TakeTritonError(TRITONBACKEND_ModelInstanceModel(instance, &model));
        !s.ok()) {
      return s;
    }
    if (absl::Status s = TakeTritonError(TRITONBACKEND_ModelState(model, &model_state)); !s.ok()) {
      return s;
    }
    auto state = Instance::Create(instance, *static_cast<const Model*>(model_state));
    if (!state.ok()) return state.status();
    absl::Status s = TakeTritonError(TRITONBACKEND_ModelInstanceSetState(instance, state->get()));
    if (s.ok()) state->release();  // owned by the instance now; InstanceFinalize deletes it
    return s;
  });
}

MYOPS_TRITON_EXPORT TRITONSERVER_Error* TRITONBACKEND_ModelInstanceFinalize(
    TRITONBACKEND_ModelInstance* instance) {
  return Boundary("myops model instance unload", [&] {
    void* state = nullptr;
    absl::Status s = TakeTritonError(TRITONBACKEND_ModelInstanceState(instance, &state));
    delete static_cast<Instance*>(state);
    return s;
  });
}

// Never returns an error: Triton would then answer the requests itself, and Execute has
// answered (and released) each of them already.
MYOPS_TRITON_EXPORT TRITONSERVER_Error* TRITONBACKEND_ModelInstanceExecute(
    TRITONBACKEND_ModelInstance* instance, TRITONBACKEND_Request** requests,
    const uint32_t request_count) {
  void* state = nullptr;
  if (TRITONSERVER_Error* e = TRITONBACKEND_ModelInstanceState(instance, &state); e != nullptr) {
    return e;  // nothing answered yet: Triton answers every request with this error
  }
  static_cast<Instance*>(state)->Execute(requests, request_count);
  return nullptr;
}

}  // extern "C"
