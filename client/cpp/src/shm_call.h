// Calls whose tensors travel in shared memory (ClientOptions::shared_memory): placing a
// call's tensors in a leased region of the client's pool (shm_pool.h), and reading a
// result written to that region. The encoding itself is call_codec.h's.
#ifndef MYOPS_CLIENT_SRC_SHM_CALL_H_
#define MYOPS_CLIENT_SRC_SHM_CALL_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <grpcpp/support/byte_buffer.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "call_codec.h"
#include "client_core.h"
#include "myops/client/results.h"
#include "myops/client/tensor.h"
#include "shm_pool.h"

namespace myops::client::internal {

// One call's region and what is in it; the region is the call's until this is destroyed,
// which must not happen before the call's response has been read. Shared: results left in
// the region (CallOptions::results_in_shared_memory) keep it.
struct ShmCall {
  ShmLease lease;
  CallPlacement placement;  // refers to the lease's name

  // The region for DecodeCallResponse (results copied out of it).
  ResponseRegion region() const;
};

// The placement for CallFields: null for a call without a region (`shm` null).
inline const CallPlacement* PlacementOf(const std::shared_ptr<ShmCall>& shm) {
  return shm != nullptr ? &shm->placement : nullptr;
}

// The region for DecodeCallResponse of a call made with `shm` (none without one): results
// copied out of it, or, with `in_place` (CallOptions::results_in_shared_memory), left
// there, each keeping `shm` (and so its lease).
std::optional<ResponseRegion> ResultRegion(const std::shared_ptr<ShmCall>& shm, bool in_place);

// Whether scale_shift's input `x` may go to shared memory: `pool` (null: none) wants a
// tensor of its size. Its validation then skips the message limit.
inline bool MayShare(const ShmPool* pool, const TensorView& x) {
  return pool != nullptr && x.size_bytes != 0 && pool->Wants(x.size_bytes);
}

// Copies the tensors of `call` that `pool` wants in shared memory (ShmPool::Wants; views
// that fail ValidateTensorView are left for ValidateCall to report) into one leased
// region, at 64-byte aligned offsets, and leaves room after them for result 0 of
// `result_bytes` (by default, the largest tensor placed: what elementwise operators
// return; a result that does not fit comes back inline). Null (the call travels inline)
// when `pool` is null, nothing is placed or the pool has no region to lend; errors as
// ShmPool::Acquire's.
absl::StatusOr<std::shared_ptr<ShmCall>> PlaceCall(
    ShmPool* pool, const CallFields& call, std::optional<uint64_t> result_bytes = std::nullopt);

// Whether a failed call should be placed and made again: it used `shm`, whose region the
// server does not know (it restarted since the region was registered); forgets the
// pool's regions so that the next placement registers new ones.
bool ForgetIfUnknownRegion(ShmPool* pool, const ShmCall* shm, const absl::Status& status);

// The blocking raw unary Call of `call` (validated first: ValidateCall's errors), with
// retries: the response's bytes into `response`, the replica that served it into
// `replica` (if not null). Shared by Client::Call and the ScaleShift calls that go
// through shared memory.
absl::Status CallRaw(const ClientCore& core, const CallFields& call, const CallOptions& options,
                     grpc::ByteBuffer* response, std::string* replica = nullptr);

// Reads the response of a scale_shift Call made with `shm`: result 0 with x's dtype and
// shape, in the region or inline, copied once into a new tensor (or, `in_place`, left in
// the region as ResultRegion does). InternalError when it is not that.
absl::StatusOr<ScaleShiftResult> DecodeScaleShift(const grpc::ByteBuffer& response,
                                                  const std::shared_ptr<ShmCall>& shm,
                                                  const TensorView& x, bool in_place);

// As DecodeScaleShift, but into `out` (x's dtype, shape and size; checked by the caller).
absl::StatusOr<Timing> DecodeScaleShiftInto(const grpc::ByteBuffer& response, const ShmCall& shm,
                                            const TensorView& x, const MutableTensorView& out);

}  // namespace myops::client::internal

#endif  // MYOPS_CLIENT_SRC_SHM_CALL_H_
