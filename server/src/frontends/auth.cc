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
  auto tokens = common::ReadTokenList(path, "--auth-token-file");
  if (!tokens.ok()) return tokens.status();
  return BearerAuth(*std::move(tokens));
}

int BearerAuth::Match(absl::string_view value) const {
  // The scheme is case-insensitive (RFC 9110, 11.1): "bearer" is "Bearer".
  if (!absl::StartsWithIgnoreCase(value, kScheme)) return -1;
  const absl::string_view given = value.substr(kScheme.size());
  int found = -1;
  for (size_t i = 0; i < tokens_.size(); ++i) {  // every one: the time tells no index
    if (ConstantTimeEquals(given, tokens_[i])) found = static_cast<int>(i);
  }
  return found;
}

namespace {

std::string TenantName(int index) { return absl::StrCat("tenant ", index + 1); }

}  // namespace

absl::StatusOr<std::string> BearerAuth::Tenant(const grpc::CallbackServerContext& context) const {
  if (tokens_.empty()) return std::string();
  const auto& metadata = context.client_metadata();
  const auto found = metadata.find("authorization");
  if (found != metadata.end() && metadata.count("authorization") == 1) {
    const int index = Match(absl::string_view(found->second.data(), found->second.size()));
    if (index >= 0) return TenantName(index);
  }
  return absl::UnauthenticatedError(
      "this server requires the metadata \"authorization: Bearer <token>\" with a token of "
      "its --auth-token-file");
}

absl::StatusOr<std::string> BearerAuth::TenantOfHeader(const char* authorization) const {
  if (tokens_.empty()) return std::string();
  if (authorization != nullptr) {
    const int index = Match(authorization);
    if (index >= 0) return TenantName(index);
  }
  return absl::UnauthenticatedError(
      "this server requires the header \"Authorization: Bearer <token>\" with a token of "
      "its --auth-token-file");
}

}  // namespace myops::server
