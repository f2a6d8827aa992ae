// How the HTTP/REST binding answers (respond.h).
#include "frontends/oip/rest/respond.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "frontends/oip/rest/json.h"
#include "http/server.h"

namespace myops::server {
namespace {

const char* Reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 409:
      return "Conflict";
    case 411:
      return "Length Required";
    case 413:
      return "Payload Too Large";
    case 429:
      return "Too Many Requests";
    case 499:
      return "Client Closed Request";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    default:
      return "Internal Server Error";
  }
}

}  // namespace

int HttpStatusOf(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kOk:
      return 200;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange:
      return 400;
    case absl::StatusCode::kUnauthenticated:
      return 401;
    case absl::StatusCode::kPermissionDenied:
      return 403;
    case absl::StatusCode::kNotFound:
      return 404;
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kAborted:
      return 409;
    case absl::StatusCode::kResourceExhausted:
      return 429;
    case absl::StatusCode::kCancelled:
      return 499;
    case absl::StatusCode::kUnimplemented:
      return 501;
    case absl::StatusCode::kUnavailable:
      return 503;
    case absl::StatusCode::kDeadlineExceeded:
      return 504;
    default:
      return 500;
  }
}

std::string ResponseText(int status, absl::string_view body, const char* content_type,
                         int64_t tail_bytes, absl::string_view extra_headers) {
  std::string out =
      absl::StrCat("HTTP/1.1 ", status, " ", Reason(status), "\r\nContent-Type: ", content_type,
                   "\r\nContent-Length: ", static_cast<int64_t>(body.size()) + tail_bytes, "\r\n",
                   extra_headers, "\r\n");
  out.append(body.data(), body.size());
  return out;
}

void Respond(HttpExchange* conn, int status, absl::string_view body, const char* content_type,
             const std::vector<absl::string_view>& tail, int64_t tail_bytes,
             absl::string_view extra_headers) {
  if (!conn->Write(ResponseText(status, body, content_type, tail_bytes, extra_headers))) return;
  for (absl::string_view part : tail) {
    if (!part.empty() && !conn->Write(part)) return;  // the client left or stalled
  }
}

void RespondError(HttpExchange* conn, int http_status, const absl::Status& status) {
  Respond(conn, http_status, kserve::ErrorJson(status.message()));
}

void RespondError(HttpExchange* conn, const absl::Status& status) {
  RespondError(conn, HttpStatusOf(status.code()), status);
}

absl::Status ReadBody(HttpExchange* conn, int64_t length, char* into) {
  return ReadBodyInSteps(conn, length, into, [](int64_t) { return absl::OkStatus(); });
}

absl::Status ReadBodyInSteps(HttpExchange* conn, int64_t length, char* into,
                             const std::function<absl::Status(int64_t total)>& grant) {
  constexpr int64_t kFirstStep = 64 << 10;
  int64_t granted = 0;
  for (int64_t got = 0; got < length;) {
    if (got == granted) {
      granted = std::min(length, std::max(kFirstStep, 2 * got));
      if (absl::Status s = grant(granted); !s.ok()) return s;
    }
    const int64_t n = conn->Read(into + got, granted - got);
    if (n <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("the client sent ", got, " of the body's ", length, " bytes"));
    }
    got += n;
  }
  return absl::OkStatus();
}

}  // namespace myops::server
