// Fuzz target: the server's generic-call decoding, as Call and CallStream run it:
// server::ParseCallRequest (wire::CheckCallRequestHead, then protobuf) over a
// myops.v1.CallRequest received as several slices (slices.h), then DecodeArguments with
// the default limits and ResolveResultRegions, on a server with shared memory: one
// 64 KiB region registered as "r" (call_shm.h). Beyond "no crash, no sanitizer report",
// checks what the server relies on: refusals are INVALID_ARGUMENT (NOT_FOUND for an
// unknown region); what the budget reserves for the parse (CallParseReservation, from
// the head check's size of the head) bounds the parsed message; every accepted
// tensor's size is numel * itemsize, and copies out of the region stay within it.
#include <string>

#include "frontends/myops_v1/call_codec.h"
#include "fuzz_shm.h"
#include "myops/v1/myops.pb.h"
#include "myops/wire/call_wire.h"
#include "myops/wire/tensor_wire.h"
#include "slices.h"

namespace {

using myops::fuzz::Fail;

bool Refused(const absl::Status& s) {
  return s.code() == absl::StatusCode::kInvalidArgument || s.code() == absl::StatusCode::kNotFound;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) { return myops::fuzz::QuietProtobufLogs(); }

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  myops::fuzz::SlicedInput input =
      myops::fuzz::SplitIntoSlices(bytes, size, myops::wire::kMaxHeadBytes);
  myops::v1::CallRequest request;
  const absl::Status status = myops::server::ParseCallRequest(input.buffer, &request);
  if (!status.ok()) {
    if (status.code() != absl::StatusCode::kInvalidArgument) {
      Fail("a refusal with a code other than INVALID_ARGUMENT");
    }
    return 0;
  }
  // What the front end reserves before parsing (CallParseReservation, from the head
  // check) bounds the parsed message (the message object itself lives in the call's state).
  const auto head = myops::wire::CheckCallRequestHead(input.buffer);
  if (!head.ok()) Fail("parsed although the head check refused it");
  const auto reserved = myops::server::CallParseReservation(size, *head);
  if (request.SpaceUsedLong() - sizeof(request) > static_cast<size_t>(reserved) - size) {
    Fail("an accepted request outgrows its reservation");
  }
  myops::server::CallShm shm;
  shm.regions = myops::fuzz::RegionsWithRegion();
  shm.reserve = [](int64_t bytes) {
    if (bytes < 0 || static_cast<uint64_t>(bytes) > myops::fuzz::kFuzzRegionBytes)
      Fail("a copy beyond the region");
    return absl::OkStatus();
  };
  const auto args = myops::server::DecodeArguments(request, myops::server::TensorLimits{}, &shm);
  if (!args.ok()) {
    if (!Refused(args.status())) Fail("DecodeArguments failed with an unexpected code");
    return 0;
  }
  if (absl::Status regions = myops::server::ResolveResultRegions(request, &shm);
      !regions.ok() && !Refused(regions)) {
    Fail("ResolveResultRegions failed with an unexpected code");
  }
  for (const myops::server::NamedValue& v : *args) {
    const myops::server::TensorView& t = v.value.tensor;
    int64_t numel = 1;
    for (int64_t d : t.shape) numel *= d;
    if (v.value.kind == myops::server::Value::Kind::kTensor &&
        numel * myops::server::ItemSize(t.dtype) != t.bytes) {
      Fail("an accepted tensor's size is not numel * itemsize");
    }
  }
  return 0;
}
