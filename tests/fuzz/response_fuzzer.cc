// Fuzz target: the C++ client's unary response decoder (client/cpp/src/codec.cc,
// DecodeResponseBytes and DecodeResponseBytesInto over a myops.v1.ScaleShiftResponse
// received as several slices, see slices.h). A server is untrusted input to the client:
// every outcome must be a result or an InternalError, never a crash or an oversized
// allocation. Checks that an accepted output is self-consistent (its byte count matches
// dtype and shape) and that both decoders agree on it.
#include <cstring>
#include <string>
#include <vector>

#include "codec.h"
#include "myops/client/tensor.h"
#include "slices.h"

namespace client = myops::client;

extern "C" int LLVMFuzzerInitialize(int*, char***) { return myops::fuzz::QuietProtobufLogs(); }

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  myops::fuzz::SlicedInput input = myops::fuzz::SplitIntoSlices(bytes, size);

  // With an expected input (the blocking call's check): float32 of shape [2, 2].
  const float values[4] = {1, 2, 3, 4};
  const client::TensorView expected{client::DType::kFloat32, {2, 2}, values, sizeof(values)};
  absl::StatusOr<client::ScaleShiftResult> checked =
      client::internal::DecodeResponseBytes(input.buffer, &expected);
  if (!checked.ok() && checked.status().code() != absl::StatusCode::kInternal) {
    myops::fuzz::Fail("DecodeResponseBytes(expected) failed with a code other than INTERNAL");
  }
  if (checked.ok() &&
      (checked->output.dtype() != expected.dtype || checked->output.shape() != expected.shape ||
       checked->output.size_bytes() != sizeof(values))) {
    myops::fuzz::Fail("an output differing from the expected one was accepted");
  }

  absl::StatusOr<client::ScaleShiftResult> any =
      client::internal::DecodeResponseBytes(input.buffer, nullptr);
  if (!any.ok()) {
    if (any.status().code() != absl::StatusCode::kInternal) {
      myops::fuzz::Fail("DecodeResponseBytes failed with a code other than INTERNAL");
    }
    if (checked.ok()) myops::fuzz::Fail("accepted with an expectation, refused without");
    return 0;
  }
  if (!client::ValidateTensorView(any->output.view(), "output").ok()) {
    myops::fuzz::Fail("an accepted output does not validate");
  }

  // DecodeResponseBytesInto a buffer of the same dtype and shape yields the same bytes.
  std::vector<uint8_t> buffer(any->output.size_bytes());
  const client::MutableTensorView out{any->output.dtype(), any->output.shape(), buffer.data(),
                                      buffer.size()};
  absl::StatusOr<client::Timing> timing =
      client::internal::DecodeResponseBytesInto(input.buffer, out);
  if (!timing.ok())
    myops::fuzz::Fail("DecodeResponseBytesInto refused what DecodeResponseBytes took");
  if (!buffer.empty() && std::memcmp(buffer.data(), any->output.data(), buffer.size()) != 0) {
    myops::fuzz::Fail("DecodeResponseBytesInto wrote different bytes");
  }
  return 0;
}
