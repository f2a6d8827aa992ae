// Bearer-token authentication of the myops.v1.Myops RPCs, inference.GRPCInferenceService
// and the HTTP/REST front end (--auth-token-file). The standard grpc.health.v1 service,
// server reflection and the REST health endpoints are not checked, so probes work
// without the token.
#pragma once

#include <grpcpp/server_context.h>
#include <grpcpp/support/server_callback.h>

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace myops::server {

// Holds the accepted tokens, one per tenant (none: authentication off). A caller's
// tenant is who owns what it creates on the server (shared memory regions): "" with
// authentication off (every caller is one tenant), else "tenant N" for the N-th token of
// the file (never the token itself). Immutable, thread-safe.
class BearerAuth {
 public:
  BearerAuth() = default;  // Off: every call passes.
  explicit BearerAuth(std::vector<std::string> tokens) : tokens_(std::move(tokens)) {}

  // The tokens in `path`, one per line (common::ReadTokenList). NotFoundError for an
  // unreadable file, InvalidArgumentError for no token or one twice; both name the path
  // (never a token).
  static absl::StatusOr<BearerAuth> FromFile(const std::string& path);

  // OK when authentication is off or the call carries `authorization: Bearer <token>`
  // with one of the tokens; UnauthenticatedError saying what is expected otherwise (never
  // echoing what was sent). Tokens are compared in constant time, every one of them.
  absl::Status Check(const grpc::CallbackServerContext& context) const {
    return Tenant(context).status();
  }
  // As Check, returning the caller's tenant.
  absl::StatusOr<std::string> Tenant(const grpc::CallbackServerContext& context) const;

  // As Check and Tenant, for an HTTP request whose (first) Authorization header is
  // `authorization` (nullptr: absent).
  absl::Status CheckHeader(const char* authorization) const {
    return TenantOfHeader(authorization).status();
  }
  absl::StatusOr<std::string> TenantOfHeader(const char* authorization) const;

 private:
  // The index of the token "Bearer <token>" carries, or -1.
  int Match(absl::string_view value) const;

  std::vector<std::string> tokens_;
};

// Ends a unary call at once with `status` (a call refused before it is processed).
inline grpc::ServerUnaryReactor* RefuseUnary(grpc::CallbackServerContext* context,
                                             const grpc::Status& status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(status);
  return reactor;
}

// A stream reactor that ends its call at once with `status` (a call refused before any
// message is read). Deletes itself when done.
template <typename Request, typename Response>
class RefusedStream final : public grpc::ServerBidiReactor<Request, Response> {
 public:
  explicit RefusedStream(const grpc::Status& status) { this->Finish(status); }
  void OnDone() override { delete this; }
};

}  // namespace myops::server
