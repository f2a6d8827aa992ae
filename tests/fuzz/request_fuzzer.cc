// Fuzz target: the server's request parser, myops::wire::ParseWithTensorData over a
// myops.v1.ScaleShiftRequest (tensor field 1) received as several slices (see slices.h),
// as the unary and stream handlers call it (also messages near kMaxHeadBytes). Beyond "no crash, no
// sanitizer report", checks what callers rely on: the message's own data field stays empty, the
// TensorData's accessors agree with each other, and its spans stay valid after a move.
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "myops/v1/myops.pb.h"
#include "myops/wire/tensor_wire.h"
#include "slices.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) { return myops::fuzz::QuietProtobufLogs(); }

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  myops::fuzz::SlicedInput input =
      myops::fuzz::SplitIntoSlices(bytes, size, myops::wire::kMaxHeadBytes);
  myops::v1::ScaleShiftRequest request;
  myops::wire::TensorData parsed;
  const absl::Status status = myops::wire::ParseWithTensorData(
      input.buffer, myops::v1::ScaleShiftRequest::kInputFieldNumber, &request, &parsed);
  if (!status.ok()) {
    if (status.code() != absl::StatusCode::kInvalidArgument) {
      myops::fuzz::Fail("a refusal with a code other than INVALID_ARGUMENT");
    }
    if (parsed.size() != 0) myops::fuzz::Fail("a refused message left data behind");
    return 0;
  }
  if (!request.input().data().empty())
    myops::fuzz::Fail("the data field was parsed into the message");
  if (parsed.size() > input.message.size()) myops::fuzz::Fail("more data than message bytes");
  if (parsed.size() != 0 && !request.has_input()) myops::fuzz::Fail("data without a tensor field");

  myops::wire::TensorData data = std::move(parsed);  // Spans must survive the move.
  input.buffer.Clear();                              // Data must not depend on the buffer.
  std::string appended;
  data.AppendTo(&appended);
  if (appended.size() != data.size()) myops::fuzz::Fail("AppendTo wrote a different size");
  std::vector<uint8_t> copied(data.size());
  data.CopyTo(copied.data());
  if (data.size() != 0 && std::memcmp(copied.data(), appended.data(), data.size()) != 0) {
    myops::fuzz::Fail("CopyTo and AppendTo disagree");
  }
  if (const uint8_t* flat = data.contiguous();
      flat != nullptr && data.size() != 0 && std::memcmp(flat, appended.data(), data.size()) != 0) {
    myops::fuzz::Fail("contiguous() disagrees with AppendTo");
  }
  // The data is a substring of the message (the bytes of its last data field).
  if (input.message.find(appended) == std::string::npos)
    myops::fuzz::Fail("data not from the message");
  return 0;
}
