// The one conversion of gRPC status codes into absl::Status used by the whole client.
#ifndef MYOPS_CLIENT_SRC_GRPC_STATUS_H_
#define MYOPS_CLIENT_SRC_GRPC_STATUS_H_

#include <cstdint>

#include <grpcpp/support/status.h>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace myops::client::internal {

// A gRPC status code (google.rpc.Code numbering, as in grpc::StatusCode) and message as an
// absl::Status: same code, message preserved; 0 is OkStatus. Codes outside the canonical
// range become UNKNOWN, with the code appended to the message. Takes a plain integer
// because the per-request errors of a stream (myops.v1.Error.code) may hold any value,
// which must not be cast to grpc::StatusCode.
absl::Status ToAbslStatus(int32_t code, absl::string_view message);

inline absl::Status ToAbslStatus(const grpc::Status& status) {
  return ToAbslStatus(static_cast<int32_t>(status.error_code()), status.error_message());
}

}  // namespace myops::client::internal

#endif  // MYOPS_CLIENT_SRC_GRPC_STATUS_H_
