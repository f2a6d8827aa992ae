// Bearer-token authentication of the myops.v1.Myops RPCs, inference.GRPCInferenceService
// and the HTTP/REST front end (--auth-token-file). The standard grpc.health.v1 service,
// server reflection and the REST health endpoints are not checked, so probes work
// without the token.
#pragma once

#include <grpcpp/server_context.h>
#include <grpcpp/support/server_callback.h>

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace myops::server {

// Holds the expected token (empty: authentication off). Immutable, thread-safe.
class BearerAuth {
 public:
  BearerAuth() = default;  // Off: every call passes.
  explicit BearerAuth(std::string token) : token_(std::move(token)) {}

  // The token in `path`, with one trailing newline ("\n" or "\r\n") stripped.
  // NotFoundError for an unreadable file, InvalidArgumentError for an empty token; both
  // name the path (never the token).
  static absl::StatusOr<BearerAuth> FromFile(const std::string& path);

  // OK when authentication is off or the call carries `authorization: Bearer <token>`;
  // UnauthenticatedError saying what is expected otherwise (never echoing what was sent).
  // The token is compared in constant time.
  absl::Status Check(const grpc::CallbackServerContext& context) const;

  // As Check, for an HTTP request whose (first) Authorization header is `authorization`
  // (nullptr: absent).
  absl::Status CheckHeader(const char* authorization) const;

 private:
  bool Accepts(absl::string_view value) const;  // "Bearer <token>", compared in constant time

  std::string token_;
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
