// The Open Inference Protocol's system shared memory extension on the request path:
// input tensors read from, and requested outputs written to, regions that co-located
// clients registered (shm/shared_memory.h), named by the tensor's parameters
// shared_memory_region, shared_memory_offset (default 0) and shared_memory_byte_size, as
// Triton defines them. Protocol-neutral (both bindings' parameters become Parameter):
// neither torch nor protobuf.
//
// What a client's memory may do to a call: it may change under the server while the
// operator runs. Floating-point inputs are read in place (changed bytes give changed
// numbers, nothing worse); BOOL and integer inputs are copied out first, because an
// operator may check index values and then use them, and bytes changed in between would
// make it read out of bounds (and a C++ bool that is neither 0 nor 1 is undefined).
// An input region is only read: operators that write their arguments are not served
// (op_registry.h).
// A region that the client shrinks while in use fails the call (CheckIntact).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "frontends/oip/args.h"
#include "runtime/value.h"
#include "shm/region_io.h"
#include "shm/shared_memory.h"

namespace myops::server::kserve {

// Unregisters region `name` ("": every region) as Triton does: a name that is not
// registered is no error (clients unregister defensively, and Triton's clients expect
// success). The registry's other errors stay.
absl::Status UnregisterRegion(const OwnedRegions& shm, const std::string& name);

// Where a tensor's bytes are, when they are in shared memory.
using ShmRef = RegionRef;

// Whether `params` (a tensor's own) hold any shared memory parameter: then FindShmRef
// gives a reference or an error, never nullopt.
bool NamesRegion(const std::vector<Parameter>& params);

// The shared memory reference among a tensor's parameters `params` (its own, not the
// request's); nullopt when they name no region. INVALID_ARGUMENT naming `field` for a
// region without shared_memory_byte_size (or the reverse), a negative or non-integer
// offset or size; UNIMPLEMENTED when there is no registry (the server was started without
// --allow-shared-memory).
absl::StatusOr<std::optional<ShmRef>> FindShmRef(const std::vector<Parameter>& params,
                                                 const std::string& field, const OwnedRegions& shm);

// Points `in` (type and count set, data unset) at its bytes in `ref`'s region, which must
// be exactly count * size bytes; copies BOOL and integer tensors into `scratch` first
// (see above), after `reserve` granted their bytes. Keeps the
// region's slice alive in `slices`. Errors of Slice and `reserve`, and INVALID_ARGUMENT naming
// `field` for a size that does not match the shape.
absl::Status InputFromShm(const OwnedRegions& shm, const ShmRef& ref, const std::string& field,
                          const ReserveFn& reserve, InputTensor* in,
                          std::vector<SharedMemorySlice>* slices, Scratch* scratch);

// The requested outputs' regions, by request output index (nullopt: sent inline).
struct ShmOutputs {
  std::vector<std::optional<SharedMemorySlice>> slices;
  bool empty() const { return slices.empty(); }
};

// Resolves `refs` (by request output index; an entry per requested output) to slices.
// INVALID_ARGUMENT for shared memory on an output that names a whole Tensor[] return
// (`selected[i].element` < 0 on a list: name its elements instead).
absl::StatusOr<ShmOutputs> OutputSlices(const OwnedRegions& shm, const OpInfo& op,
                                        const std::vector<OutputRef>& selected,
                                        const std::vector<std::optional<ShmRef>>& refs,
                                        const std::vector<std::string>& fields);

// Where result 0 of `op` may be computed in place (OpCall::result_buffer): the slice of
// the first requested output when it is result 0 and a Tensor. Null data otherwise.
OpCall::OutputBuffer ResultBuffer(const OpInfo& op, const std::vector<OutputRef>& selected,
                                  const ShmOutputs& outputs);

// Writes each output of `outputs` that the request put in shared memory into its slice
// (no copy when the operator computed it there) and marks it in_shared_memory.
// INVALID_ARGUMENT naming the output when its bytes do not fit its slice.
absl::Status WriteShmOutputs(const std::vector<OutputRef>& selected, const ShmOutputs& shm,
                             std::vector<OutputTensor>* outputs);

// OK when none of the call's regions was shrunk by its client while the call ran;
// FAILED_PRECONDITION naming the region otherwise (inputs may have read as zeros,
// outputs may be lost).
absl::Status CheckIntact(const std::vector<SharedMemorySlice>& inputs, const ShmOutputs& outputs);

}  // namespace myops::server::kserve
