// myops.v1's shared memory references (SharedMemoryRef) in generic calls (Call,
// CallStream): argument tensors read from regions that clients on this host registered,
// and results written to regions, with the rules of shm/region_io.h (float tensors read in
// place, others copied out and budgeted; bounds checked against the region and the
// object's size; result 0 computed in place through an out= overload). Protobuf side,
// no torch.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "myops/v1/myops.pb.h"
#include "runtime/value.h"
#include "shm/region_io.h"

namespace myops::server {

// One call's shared memory: what decoding needs (the caller's regions, none when the
// server does not accept shared memory; a way to reserve budget for copies) and what the call keeps
// until it is answered (the argument regions' slices, the copies, the result regions).
// Owned by the call's state; used by one thread at a time.
struct CallShm {
  OwnedRegions regions;
  ReserveFn reserve;
  std::vector<SharedMemorySlice> slices;
  Scratch scratch;
  struct Result {
    std::string region;
    uint64_t offset = 0;
    SharedMemorySlice slice;
  };
  std::vector<std::optional<Result>> results;  // by schema position; empty: none
  // CallRequest.inline_unfit_results: a result that is no tensor or does not fit its
  // region goes into the response instead of failing the call.
  bool inline_unfit = false;
};

// The region result `r` goes to: null when it has none, or when it is no tensor or does
// not fit and shm.inline_unfit says to send it in the response instead.
const CallShm::Result* ResultRegion(const CallShm& shm, size_t r, const Value& result);

// Tensor `t` (shared_memory set) as a view of its region, or of a copy (non-float dtypes).
// UNIMPLEMENTED when `shm` is null or has no registry; INVALID_ARGUMENT naming `field`
// when `t` also has data or its shape and dtype do not take exactly byte_size bytes
// (limits' max_dims applies, not its sizes: the region bounds the tensor); the errors of
// the region's Slice.
absl::StatusOr<TensorView> DecodeRegionTensor(const myops::v1::Tensor& t, const std::string& field,
                                              const TensorLimits& limits, CallShm* shm);

// Resolves request.result_regions into shm->results. UNIMPLEMENTED without a registry
// when one names a region; the errors of Slice, naming the result.
absl::Status ResolveResultRegions(const myops::v1::CallRequest& request, CallShm* shm);

// Where result 0 may be computed in place (OpCall::result_buffer); null data: nowhere.
OpCall::OutputBuffer ResultBuffer(const CallShm& shm);

// Writes each result with a region there (no copy when it was computed there), then
// checks every region of the call intact. INVALID_ARGUMENT naming the result when it is
// no tensor or does not fit (unless shm.inline_unfit); FAILED_PRECONDITION for a region
// shrunk while in use.
absl::Status FinishRegions(const OpCall& call, const CallShm& shm);

}  // namespace myops::server
