// Fuzz target, differential: the client's grpc.health.v1 HealthCheckResponse decoder
// (client/cpp/src/health.cc, DecodeHealthCheckResponse) against code protoc generated
// from the real message definition (health_reference.proto). Both must accept the same
// bytes, and the decoder's status must be the generated message's (values outside 0..3,
// which an open enum keeps, map to kUnknown).
#include <cstdint>
#include <cstdio>
#include <string>

#include "health.h"
#include "health_reference.pb.h"
#include "slices.h"

namespace internal = myops::client::internal;

extern "C" int LLVMFuzzerInitialize(int*, char***) { return myops::fuzz::QuietProtobufLogs(); }

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  myops::fuzz::SlicedInput input = myops::fuzz::SplitIntoSlices(bytes, size);
  absl::StatusOr<internal::ServingStatus> decoded =
      internal::DecodeHealthCheckResponse(input.buffer);

  myops::fuzz::health::HealthCheckResponse reference;
  const bool reference_ok = reference.ParseFromString(input.message);
  if (decoded.ok() != reference_ok) {
    fprintf(stderr, "hand decoder: %s; protobuf %s\n", decoded.status().ToString().c_str(),
            reference_ok ? "accepts" : "refuses");
    myops::fuzz::Fail("the health decoder and protobuf disagree on acceptance");
  }
  if (!decoded.ok()) {
    if (decoded.status().code() != absl::StatusCode::kInternal) {
      myops::fuzz::Fail("the health decoder failed with a code other than INTERNAL");
    }
    return 0;
  }
  const int status = reference.status();
  const internal::ServingStatus want = status >= 0 && status <= 3
                                           ? static_cast<internal::ServingStatus>(status)
                                           : internal::ServingStatus::kUnknown;
  if (*decoded != want) {
    fprintf(stderr, "hand decoder: %d; protobuf: %d\n", static_cast<int>(*decoded), status);
    myops::fuzz::Fail("the health decoder and protobuf read different statuses");
  }
  return 0;
}
