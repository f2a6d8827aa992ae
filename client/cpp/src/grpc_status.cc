// Converts gRPC status codes to absl::Status (see grpc_status.h).
#include "grpc_status.h"

#include "absl/strings/str_cat.h"

namespace myops::client::internal {

absl::Status ToAbslStatus(int32_t code, absl::string_view message) {
  if (code == 0) return absl::OkStatus();
  // grpc::StatusCode and absl::StatusCode both follow google.rpc.Code: OK = 0 ...
  // UNAUTHENTICATED = 16.
  if (code < 0 || code > static_cast<int32_t>(absl::StatusCode::kUnauthenticated)) {
    return absl::UnknownError(
        absl::StrCat(message, " (non-canonical gRPC status code ", code, ")"));
  }
  return absl::Status(static_cast<absl::StatusCode>(code), message);
}

}  // namespace myops::client::internal
