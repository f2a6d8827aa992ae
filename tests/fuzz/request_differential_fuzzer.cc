// Fuzz target, differential: the same myops.v1.ScaleShiftRequest bytes parsed by the hand
// parser (myops::wire::ParseWithTensorData, over slices as the server receives them) and
// by protobuf's generated parser (ParseFromString). The contract (tensor_wire.h): the hand
// parser accepts exactly what protobuf accepts and yields the same message once the data
// bytes are put back into it (compared as SerializeAsString of both), except that it
// refuses messages whose bytes besides the tensor's data exceed kMaxHeadBytes. Inputs may
// be padded to near that cap (slices.h). Any other mismatch prints both sides and traps.
#include <cstdio>
#include <string>

#include "myops/v1/myops.pb.h"
#include "myops/wire/tensor_wire.h"
#include "slices.h"

namespace {

void PrintHex(const char* label, const std::string& bytes) {
  fprintf(stderr, "%s (%zu bytes):", label, bytes.size());
  for (size_t i = 0; i < bytes.size() && i < 512; ++i) {
    fprintf(stderr, " %02x", static_cast<unsigned char>(bytes[i]));
  }
  fprintf(stderr, "%s\n", bytes.size() > 512 ? " ..." : "");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) { return myops::fuzz::QuietProtobufLogs(); }

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  myops::fuzz::SlicedInput input =
      myops::fuzz::SplitIntoSlices(bytes, size, myops::wire::kMaxHeadBytes);
  myops::v1::ScaleShiftRequest hand;
  myops::wire::TensorData data;
  const absl::Status status = myops::wire::ParseWithTensorData(
      input.buffer, myops::v1::ScaleShiftRequest::kInputFieldNumber, &hand, &data);
  myops::v1::ScaleShiftRequest reference;
  const bool reference_ok = reference.ParseFromString(input.message);

  // The one refusal protobuf need not share: a head over the cap. The head is at most the
  // message less the data protobuf kept (earlier data fields and non-canonical varints
  // only make it smaller), so a refusal of a smaller message is a mismatch.
  const bool over_cap_possible =
      reference_ok &&
      input.message.size() - reference.input().data().size() > myops::wire::kMaxHeadBytes;
  if (status.ok() != reference_ok && !over_cap_possible) {
    PrintHex("message", input.message);
    fprintf(stderr, "hand parser: %s; protobuf %s\n", status.ToString().c_str(),
            reference_ok ? "accepts" : "refuses");
    myops::fuzz::Fail("the hand parser and protobuf disagree on acceptance");
  }
  if (!status.ok()) return 0;
  if (data.size() != 0) data.AppendTo(hand.mutable_input()->mutable_data());
  const std::string hand_bytes = hand.SerializeAsString();
  const std::string reference_bytes = reference.SerializeAsString();
  if (hand_bytes != reference_bytes) {
    PrintHex("message", input.message);
    PrintHex("hand parser, re-serialized", hand_bytes);
    PrintHex("protobuf, re-serialized", reference_bytes);
    myops::fuzz::Fail("the hand parser and protobuf yield different messages");
  }
  return 0;
}
