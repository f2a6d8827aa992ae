// The Open Inference Protocol's one request binding, shared by its gRPC and REST
// bindings: each decodes its message into an InferRequest (protocol-neutral), BindInfer
// binds that to the model's operator (arguments by args.h's rules, shared memory by
// shm.h's, the timeout, the outputs asked for), and once the call has run InferOutputs
// gives the outputs that each binding then writes in its own form. So both apply the
// same checks in the same order, with the same messages. Neither torch nor protobuf.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "frontends/oip/args.h"
#include "frontends/oip/shm.h"
#include "pipeline/memory_budget.h"
#include "pipeline/pipeline.h"
#include "runtime/op_registry.h"
#include "shm/region_io.h"
#include "shm/shared_memory.h"

namespace myops::server::kserve {

// An inference request as a binding decoded it. Input tensors are views into the
// binding's message (or into `scratch`); those whose shared memory parameters name a
// region have no data yet (BindInfer points them into it).
struct InferRequest {
  std::string model;  // as messages name it, "namespace::op[.overload]"; moved to the call
  std::vector<InputTensor> inputs;
  std::vector<std::vector<Parameter>> input_shm;   // by input, its shm parameters; or empty
  std::vector<Parameter> parameters;               // the request's
  std::vector<std::string> outputs;                // the outputs asked for, in order
  std::vector<std::vector<Parameter>> output_shm;  // by output, its shm parameters; or empty
  Scratch scratch;  // copies the inputs point into (raw contents, narrowed contents, JSON data,
                    // regions)
};

// One inference on its way through the pipeline, whichever binding carried it: the
// pipeline's call state, the model, the outputs asked for, and the regions (and budgeted
// copies of them) that argument views point into. Owned by the binding's request state.
struct InferCall : CallState {
  const OpInfo* op_info = nullptr;            // the model's operator, in the registry
  std::vector<OutputRef> selected;            // the outputs asked for
  std::vector<SharedMemorySlice> shm_inputs;  // regions input views point into
  std::vector<BudgetReservation> shm_copies;  // BOOL and integer inputs copied out of them
  ShmOutputs shm_outputs;                     // regions of the outputs that go there
  std::vector<int64_t> classify;  // by output asked for: its classes asked for (0: none)
};

// The arguments of `request` for `op`: its inputs (InputArgument; narrowed copies kept in
// request->scratch), grouped into Tensor[] arguments (GroupTensorLists), then its
// parameters (ParameterArgument). Inputs in regions must have been read already.
absl::StatusOr<std::vector<NamedValue>> InferArguments(const OpInfo& op, InferRequest* request);

// Binds `request` to `op` in `call` (op_info, op, args, timeout_us, selected, the regions
// and call.result_buffer): reads the inputs in the caller's regions `shm` (none: a region
// named is UNIMPLEMENTED) with copies granted by `reserve`, then the arguments, the timeout
// parameter and the outputs asked for. The errors of FindShmRef, InputFromShm,
// InferArguments, TimeoutParameter, SelectOutputs and OutputSlices, in that order.
absl::Status BindInfer(const OpInfo& op, const OwnedRegions& shm, const ReserveFn& reserve,
                       InferRequest* request, InferCall* call);

// The outputs of `call` once it has run (ResultOutputs), those asked for as classes
// classified (Classify), those in regions written there (WriteShmOutputs), after checking
// that no region changed size under the call (CheckIntact).
absl::StatusOr<std::vector<OutputTensor>> InferOutputs(const InferCall& call);

}  // namespace myops::server::kserve
