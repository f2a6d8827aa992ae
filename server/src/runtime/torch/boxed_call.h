// Runs one generic call: builds the boxed stack from the bound arguments (defaults from
// the schema), calls the operator through the dispatcher, and turns its results into
// values whose tensors are contiguous CPU memory kept alive by the call. Torch side;
// called by the device runners under their device/stream guards and InferenceMode.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/Device.h>

#include "runtime/torch/op_handles.h"
#include "runtime/value.h"

namespace myops::server {

// Argument tensors are wrapped without copying (CPU) or copied to `device`; result
// tensors on another device are copied back to the CPU (synchronously, on the current
// stream). On the CPU, with call.result_buffer set and an out= overload (op.out), result 0
// is computed straight into the buffer when it fits: its shape and dtype are the buffer's
// layout, or follow from the op's one tensor argument (pointwise ops; ResultDtypes), or
// (results of 64 KiB or more) are told first by the op's Meta kernel. Throws what the
// operator throws (mapped by the executor), and c10::NotImplementedError for a result the wire
// cannot carry (e.g. a complex dtype). What the op allocates on the CPU meanwhile is
// charged to call.memory (runtime/torch/charged_allocator.h).
void RunBoxed(const OpHandle& op, OpCall& call, c10::Device device);

}  // namespace myops::server
