// Fuzz target: the server's request decoding, as the unary and stream handlers run it:
// server::ParseRequest (myops::wire::ParseWithTensorData over a myops.v1.ScaleShiftRequest
// received as several slices, see slices.h; also messages near kMaxHeadBytes), then
// server::DecodeTensorHead with the default limits, then, for a valid request, the
// response encoding (EncodeResponse with the input's bytes as the output), and the
// handler's own steps, CheckScaleShift and BindScaleShift (the generic call it becomes).
// Beyond "no crash, no sanitizer report", checks what callers rely on: refusals are
// INVALID_ARGUMENT; the message's own data field stays empty; the TensorData accessors
// agree and its spans stay valid after a move; an accepted tensor's size is
// numel * itemsize; the encoded response parses back to the input's dtype, shape, bytes;
// the call's input is the request's bytes, aligned to its item size, its reservation
// covers them (twice when gathered) and the output, and its result buffer is the output.
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "frontends/myops_v1/codec.h"
#include "frontends/myops_v1/scale_shift.h"
#include "myops/v1/myops.pb.h"
#include "myops/wire/tensor_wire.h"
#include "slices.h"

namespace {

using myops::fuzz::Fail;

void CheckResponse(const myops::v1::ScaleShiftRequest& request, const std::string& data) {
  myops::server::Timing timing;
  timing.device = "cpu";
  const grpc::ByteBuffer encoded =
      myops::server::EncodeResponse(request, grpc::Slice(data), timing);
  myops::v1::ScaleShiftResponse response;
  myops::wire::TensorData output;
  if (!myops::wire::ParseWithTensorData(encoded, myops::v1::ScaleShiftResponse::kOutputFieldNumber,
                                        &response, &output)
           .ok()) {
    Fail("the encoded response does not parse");
  }
  std::string bytes;
  output.AppendTo(&bytes);
  if (response.output().dtype() != request.input().dtype() ||
      response.output().shape_size() != request.input().shape_size() ||
      !std::equal(response.output().shape().begin(), response.output().shape().end(),
                  request.input().shape().begin()) ||
      bytes != data || response.request_id() != request.request_id()) {
    Fail("the encoded response differs from the request it answers");
  }
}

// The handler's steps on an accepted request: the generic call it becomes.
void CheckCall(myops::v1::ScaleShiftRequest request, myops::wire::TensorData data,
               const myops::server::TensorView& view, const std::string& bytes) {
  myops::server::ScaleShiftState state;
  state.request = std::move(request);
  state.input = std::move(data);
  const absl::StatusOr<int64_t> held =
      myops::server::CheckScaleShift(myops::server::TensorLimits{}, &state);
  if (!held.ok()) Fail("CheckScaleShift refused what DecodeTensorHead accepted");
  const int64_t size = static_cast<int64_t>(bytes.size());
  if (*held != 2 * size && *held != 3 * size)
    Fail("the reservation is not input (x1 or x2) + output");
  myops::server::BindScaleShift(0, &state);
  if (state.model != 0 || state.args.size() != 3)
    Fail("the call is not scale_shift(x, alpha, beta)");
  const myops::server::TensorView& x = state.args[0].value.tensor;
  if (x.bytes != size || x.shape != view.shape || x.dtype != view.dtype ||
      (size != 0 && std::memcmp(x.data, bytes.data(), bytes.size()) != 0)) {
    Fail("the call's input is not the request's tensor");
  }
  if (reinterpret_cast<uintptr_t>(x.data) % myops::server::ItemSize(x.dtype) != 0) {
    Fail("the call's input is misaligned for its dtype");
  }
  if (size != 0 && (*held == 3 * size) != (x.data == state.gathered.begin())) {
    Fail("the input was gathered without being reserved twice, or the other way round");
  }
  const myops::server::OpCall::OutputBuffer& out = state.call.result_buffer;
  if (out.data != state.output.begin() || out.bytes != size || !out.layout.has_value() ||
      out.layout->shape != view.shape || out.layout->dtype != view.dtype) {
    Fail("the result buffer is not the output's slice with the input's layout");
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) { return myops::fuzz::QuietProtobufLogs(); }

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  myops::fuzz::SlicedInput input =
      myops::fuzz::SplitIntoSlices(bytes, size, myops::wire::kMaxHeadBytes);
  myops::v1::ScaleShiftRequest request;
  myops::wire::TensorData parsed;
  const absl::Status status = myops::server::ParseRequest(input.buffer, &request, &parsed);
  if (!status.ok()) {
    if (status.code() != absl::StatusCode::kInvalidArgument) {
      Fail("a refusal with a code other than INVALID_ARGUMENT");
    }
    if (parsed.size() != 0) Fail("a refused message left data behind");
    return 0;
  }
  if (!request.input().data().empty()) Fail("the data field was parsed into the message");
  if (parsed.size() > input.message.size()) Fail("more data than message bytes");
  if (parsed.size() != 0 && !request.has_input()) Fail("data without a tensor field");

  myops::wire::TensorData data = std::move(parsed);  // Spans must survive the move.
  input.buffer.Clear();                              // Data must not depend on the buffer.
  std::string appended;
  data.AppendTo(&appended);
  if (appended.size() != data.size()) Fail("AppendTo wrote a different size");
  std::vector<uint8_t> copied(data.size());
  data.CopyTo(copied.data());
  if (data.size() != 0 && std::memcmp(copied.data(), appended.data(), data.size()) != 0) {
    Fail("CopyTo and AppendTo disagree");
  }
  if (const uint8_t* flat = data.contiguous();
      flat != nullptr && data.size() != 0 && std::memcmp(flat, appended.data(), data.size()) != 0) {
    Fail("contiguous() disagrees with AppendTo");
  }
  // The data is a substring of the message (the bytes of its last data field).
  if (input.message.find(appended) == std::string::npos) Fail("data not from the message");

  const absl::StatusOr<myops::server::TensorView> view = myops::server::DecodeTensorHead(
      request.input(), data.size(), "input", myops::server::TensorLimits{});
  if (!view.ok()) {
    if (view.status().code() != absl::StatusCode::kInvalidArgument) {
      Fail("DecodeTensorHead failed with a code other than INVALID_ARGUMENT");
    }
    return 0;
  }
  int64_t numel = 1;
  for (int64_t d : view->shape) numel *= d;  // Checked by DecodeTensorHead: no overflow.
  if (view->bytes != static_cast<int64_t>(data.size()) ||
      numel * myops::server::ItemSize(view->dtype) != view->bytes) {
    Fail("an accepted tensor's size is not numel * itemsize");
  }
  CheckResponse(request, appended);
  CheckCall(std::move(request), std::move(data), *view, appended);
  return 0;
}
