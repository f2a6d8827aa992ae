// The messages of the standard gRPC health service (grpc.health.v1.Health/Check), which
// the client calls through the generic stub (unary_call.h) with hand-encoded messages.
// Debian's gRPC ships no generated health stubs, and generating our own copy of
// grpc.health.v1 would register that proto file a second time in any process that also
// links one (protobuf aborts).
#ifndef MYOPS_CLIENT_SRC_HEALTH_H_
#define MYOPS_CLIENT_SRC_HEALTH_H_

#include <string>

#include <grpcpp/support/byte_buffer.h>

#include "absl/status/statusor.h"

namespace myops::client::internal {

inline constexpr char kHealthCheckMethod[] = "/grpc.health.v1.Health/Check";

// grpc.health.v1.HealthCheckResponse.ServingStatus.
enum class ServingStatus { kUnknown = 0, kServing = 1, kNotServing = 2, kServiceUnknown = 3 };

// Serializes HealthCheckRequest{service}.
grpc::ByteBuffer EncodeHealthCheckRequest(const std::string& service);

// Parses HealthCheckResponse; InternalError when the bytes are not one.
absl::StatusOr<ServingStatus> DecodeHealthCheckResponse(const grpc::ByteBuffer& response);

}  // namespace myops::client::internal

#endif  // MYOPS_CLIENT_SRC_HEALTH_H_
