// The grpc.health.v1 messages (requests encoded by hand, responses read through
// google.protobuf.Int32Value; see health.h).
//
//   message HealthCheckRequest { string service = 1; }
//   message HealthCheckResponse { ServingStatus status = 1; }
#include "health.h"

#include <cstdint>
#include <vector>

#include <google/protobuf/wrappers.pb.h>

#include "absl/strings/str_cat.h"
#include "myops/wire/tensor_wire.h"

namespace myops::client::internal {
namespace {

constexpr int kLengthDelimited = 2;  // Wire type of the service name.

}  // namespace

grpc::ByteBuffer EncodeHealthCheckRequest(const std::string& service) {
  std::string bytes;
  if (!service.empty()) {  // proto3: the default value is not written.
    bytes.push_back(static_cast<char>((1 << 3) | kLengthDelimited));
    wire::AppendVarint(service.size(), &bytes);
    bytes += service;
  }
  grpc::Slice slice(bytes);
  return grpc::ByteBuffer(&slice, 1);
}

absl::StatusOr<ServingStatus> DecodeHealthCheckResponse(const grpc::ByteBuffer& response) {
  std::string bytes;
  if (!wire::Flatten(response, &bytes)) return absl::InternalError("unreadable health response");
  // google.protobuf.Int32Value { int32 value = 1; } has HealthCheckResponse's encoding (an
  // open enum is an int32 on the wire), so protobuf's generated parser reads it exactly as
  // a generated HealthCheckResponse would: unknown fields (groups too) skipped, the last
  // status wins, a varint truncated to 32 bits.
  google::protobuf::Int32Value parsed;
  if (!parsed.ParseFromString(bytes)) {
    return absl::InternalError(
        absl::StrCat("malformed grpc.health.v1.HealthCheckResponse (", bytes.size(), " bytes)"));
  }
  const int32_t status = parsed.value();
  return status >= 0 && status <= 3 ? static_cast<ServingStatus>(status) : ServingStatus::kUnknown;
}

}  // namespace myops::client::internal
