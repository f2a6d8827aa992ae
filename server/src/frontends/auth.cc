// Bearer-token authentication (see frontends/auth.h).
#include "frontends/auth.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "myops/common/token_file.h"
#include "util/secret.h"

namespace myops::server {
namespace {

constexpr absl::string_view kScheme = "Bearer ";

}  // namespace

absl::StatusOr<BearerAuth> BearerAuth::FromFile(const std::string& path) {
  absl::StatusOr<std::string> token = common::ReadTokenFile(path, "--auth-token-file");
  if (!token.ok()) return token.status();
  return BearerAuth(*std::move(token));
}

bool BearerAuth::Accepts(absl::string_view value) const {
  // The scheme is case-insensitive (RFC 9110, 11.1): "bearer" is "Bearer".
  return absl::StartsWithIgnoreCase(value, kScheme) &&
         ConstantTimeEquals(value.substr(kScheme.size()), token_);
}

absl::Status BearerAuth::Check(const grpc::CallbackServerContext& context) const {
  if (token_.empty()) return absl::OkStatus();
  const auto& metadata = context.client_metadata();
  const auto found = metadata.find("authorization");
  if (found != metadata.end() && metadata.count("authorization") == 1 &&
      Accepts(absl::string_view(found->second.data(), found->second.size()))) {
    return absl::OkStatus();
  }
  return absl::UnauthenticatedError(
      "this server requires the metadata \"authorization: Bearer <token>\" with the token of "
      "its --auth-token-file");
}

absl::Status BearerAuth::CheckHeader(const char* authorization) const {
  if (token_.empty() || (authorization != nullptr && Accepts(authorization))) {
    return absl::OkStatus();
  }
  return absl::UnauthenticatedError(
      "this server requires the header \"Authorization: Bearer <token>\" with the token of "
      "its --auth-token-file");
}

}  // namespace myops::server
