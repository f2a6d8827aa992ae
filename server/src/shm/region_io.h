// Reading a call's input bytes from a client's shared memory region, for every front end
// (the Open Inference Protocol's parameters and myops.v1's SharedMemoryRef both become a
// RegionRef): a view into the region, or a private copy that the client cannot change
// between the operator's checks and its use (see frontends/oip/shm.h for which tensors
// are copied). Protocol-neutral: neither torch nor protobuf.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "shm/shared_memory.h"

namespace myops::server {

// Where a tensor's bytes are, when they are in shared memory.
struct RegionRef {
  std::string region;
  uint64_t offset = 0;
  uint64_t byte_size = 0;
};

// Reserves `bytes` of the server's memory budget for the call (RESOURCE_EXHAUSTED when
// they are not there).
using ReserveFn = std::function<absl::Status(int64_t bytes)>;

// Copies of input data that a front end had to make (region copies, narrowed typed
// contents, JSON data) and that argument tensors point into; owned by the call.
using Scratch = std::vector<std::unique_ptr<char[]>>;

// The `ref.byte_size` bytes at `ref`, for a tensor of `item_size`-byte elements: a view
// into the region when `in_place` and the bytes are aligned to `item_size` (kernels load
// whole elements: a misaligned load is undefined behaviour), else a private copy (granted
// by `reserve`, kept in `scratch`, aligned for any item size). The region's slice is kept
// in `slices`, which keeps the view valid. Errors of Slice (naming `field`) and of `reserve`.
absl::StatusOr<const char*> RegionBytes(const OwnedRegions& shm, const RegionRef& ref,
                                        bool in_place, int64_t item_size, const std::string& field,
                                        const ReserveFn& reserve,
                                        std::vector<SharedMemorySlice>* slices, Scratch* scratch);

}  // namespace myops::server
