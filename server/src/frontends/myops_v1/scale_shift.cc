// ScaleShift as typed sugar over the generic call (see frontends/myops_v1/scale_shift.h).
#include "frontends/myops_v1/scale_shift.h"

#include <cstring>
#include <utility>

#include <grpc/slice.h>

#include "absl/strings/str_cat.h"
#include "frontends/myops_v1/codec.h"

namespace myops::server {
namespace {

// Whether the input must be copied to be contiguous and aligned to its item size
// (kernels load whole elements, and a misaligned load is undefined behaviour).
bool MustGather(const ScaleShiftState& state) {
  const uint8_t* bytes = state.input.contiguous();
  return bytes == nullptr || reinterpret_cast<uintptr_t>(bytes) % ItemSize(state.x.dtype) != 0;
}

// The input's bytes, contiguous and aligned (copied into `gathered` when MustGather).
const void* ContiguousInput(ScaleShiftState* state) {
  if (!MustGather(*state)) return state->input.contiguous();
  // Never inline (grpc_slice_malloc keeps up to 23 bytes inside the grpc_slice, at an odd
  // offset): a heap block, aligned for any item size.
  state->gathered =
      grpc::Slice(grpc_slice_malloc_large(state->input.size()), grpc::Slice::STEAL_REF);
  uint8_t* out = const_cast<uint8_t*>(state->gathered.begin());  // Freshly allocated: ours.
  state->input.CopyTo(out);
  return out;
}

}  // namespace

absl::StatusOr<int64_t> CheckScaleShift(const TensorLimits& limits, ScaleShiftState* state) {
  if (!state->request.has_input()) {
    return absl::InvalidArgumentError("the request has no 'input' tensor");
  }
  auto x = DecodeTensorHead(state->request.input(), state->input.size(), "input", limits);
  if (!x.ok()) return x.status();
  state->x = *std::move(x);
  const int64_t received = static_cast<int64_t>(state->input.size());
  return received * (MustGather(*state) ? 2 : 1) + state->x.bytes;
}

void BindScaleShift(int model, ScaleShiftState* state) {
  const myops::v1::ScaleShiftRequest& request = state->request;
  state->x.data = ContiguousInput(state);
  MutableTensorView output = AllocateOutput(state->x, &state->output);
  if (model >= 0) {
    state->model = model;
  } else {
    state->op = "myops::scale_shift";  // for the pipeline's answer: not served
  }
  state->device = request.device();
  state->args.resize(3);
  state->args[0].value = Value::Tensor(state->x);
  state->args[1].value = Value::Float(request.alpha());
  state->args[2].value = Value::Float(request.beta());
  state->call.result_buffer.data = output.data;
  state->call.result_buffer.bytes = output.bytes;
  state->call.result_buffer.layout =
      OpCall::OutputBuffer::Layout{output.dtype, std::move(output.shape)};
}

absl::Status TakeScaleShiftResult(ScaleShiftState* state) {
  const std::vector<Value>& results = state->call.results;
  if (results.size() != 1 || results[0].kind != Value::Kind::kTensor) {
    return absl::InternalError("myops::scale_shift did not return one tensor");
  }
  const TensorView& result = results[0].tensor;
  if (result.data == state->output.begin()) return absl::OkStatus();  // computed in place
  if (result.dtype != state->x.dtype || result.shape != state->x.shape ||
      result.bytes != static_cast<int64_t>(state->output.size())) {
    return absl::InternalError(absl::StrCat("myops::scale_shift returned a tensor of ",
                                            result.bytes, " bytes for an input of ", state->x.bytes,
                                            ", or of another dtype or shape"));
  }
  if (result.bytes > 0) {
    std::memcpy(const_cast<uint8_t*>(state->output.begin()), result.data,
                static_cast<size_t>(result.bytes));
  }
  return absl::OkStatus();
}

}  // namespace myops::server
