// ScaleShift as typed sugar over the generic call: a ScaleShift request (unary or on a
// stream) becomes a call of myops::scale_shift(x, alpha, beta) that goes through the
// pipeline like any other (Pipeline::ProcessCall). Its input stays in the received
// slices (gathered only when split or misaligned), and its result is computed straight
// into the response's own slice (OpCall::result_buffer, through scale_shift.out on the
// CPU), so the RPC copies no tensor bytes of its own. Private to the myops.v1 front end.
#pragma once

#include <cstdint>

#include <grpcpp/support/slice.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "myops/v1/myops.pb.h"
#include "myops/wire/tensor_wire.h"
#include "pipeline/pipeline.h"
#include "runtime/tensor_view.h"

namespace myops::server {

// One ScaleShift request, whichever RPC carried it: the parsed message (all but the
// input's data), the input's data in the received slices (or gathered from them), the
// output's slice, and the generic call they become. Owned by its RPC's reactor until the
// response has been written.
struct ScaleShiftState : CallState {
  myops::v1::ScaleShiftRequest request;
  wire::TensorData input;
  TensorView x;          // the input, as CheckScaleShift decoded it
  grpc::Slice gathered;  // the input, copied: when split over slices or misaligned
  grpc::Slice output;
};

// Step 1, before anything sized by the request is allocated: checks the request's input
// (INVALID_ARGUMENT saying what is wrong) and returns the bytes the request holds until
// its response is released: the input as received (twice when it must be gathered from
// several slices or realigned) and the output.
absl::StatusOr<int64_t> CheckScaleShift(const TensorLimits& limits, ScaleShiftState* state);

// Step 2, once those bytes are reserved: gathers the input when it must be, allocates the
// output's slice and fills the generic call: the op (`model`, myops::scale_shift's registry
// index, or by name when that is -1: not served), device, arguments (x, alpha, beta) and
// result 0's buffer, the output's slice with the input's layout.
void BindScaleShift(int model, ScaleShiftState* state);

// Step 3, once the call succeeded: the output's slice holds result 0 (copied there when
// the runner computed it elsewhere, e.g. on a GPU). INTERNAL when the result does not
// have the input's layout.
absl::Status TakeScaleShiftResult(ScaleShiftState* state);

}  // namespace myops::server
