// The HTTP/1.x request head parser of the REST port's server (http/server.h): untrusted
// bytes in, a checked head or a precise refusal out. Strict where laxness would let a
// request mean two things to two parsers (request smuggling): one Content-Length (its
// repeats must agree, digits only), never with Transfer-Encoding; no obsolete line
// folding; tokens and targets without control characters. Lines end in CRLF or LF.
// Thread-compatible; no allocation beyond the head's header list.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace myops::server {

struct HttpHeader {
  absl::string_view name;   // as sent (compare case-insensitively)
  absl::string_view value;  // leading and trailing spaces and tabs removed
};

// A parsed request head. Its views point into the bytes given to ParseRequestHead.
struct RequestHead {
  absl::string_view method;  // a token: "GET", "POST", ...
  absl::string_view target;  // the request target as sent ("/v2/models/m/infer?x=1")
  absl::string_view path;    // the target up to '?' (not percent-decoded)
  int minor_version = 1;     // HTTP/1.<minor_version>: 0 or 1
  std::vector<HttpHeader> headers;
  int64_t content_length = -1;   // -1: no Content-Length header
  bool chunked = false;          // Transfer-Encoding present (any value: the body's length is
                                 // not known, the connection is not reused)
  bool keep_alive = true;        // HTTP/1.1 without "Connection: close", or HTTP/1.0 with
                                 // "Connection: keep-alive"
  bool expect_continue = false;  // "Expect: 100-continue"

  // The first header named `name` (case-insensitive); nullptr when there is none.
  const HttpHeader* Find(absl::string_view name) const;
};

// The length of the head at the start of `bytes` (up to and including the blank line that
// ends it), or 0 when `bytes` does not hold a whole head yet. `searched`: the size of
// `bytes` when an earlier call on its start found no end (the search resumes there, so a
// head read a byte at a time costs linear time).
size_t RequestHeadLength(absl::string_view bytes, size_t searched = 0);

enum class HeadError {
  kNone,
  kMalformed,         // 400: not a request line, a header line without ':', a bad token...
  kBadContentLength,  // 400: not digits, too large, repeats that differ, with Transfer-Encoding
  kVersion,           // 505: not HTTP/1.0 or HTTP/1.1
  kTooManyHeaders,    // 431: more than kMaxHeaders header lines
};

inline constexpr size_t kMaxHeaders = 100;

// Parses `head`, a whole head as RequestHeadLength measured it, into `*out`. On an error
// `*out` is unspecified and `*why` (when not null) says what was wrong, for the response.
HeadError ParseRequestHead(absl::string_view head, RequestHead* out, const char** why = nullptr);

// `path` with its percent-escapes decoded ("%3A%3A" is "::"), into `*out`; false for an
// escape that is not '%' and two hex digits, or one that decodes to NUL.
bool DecodePath(absl::string_view path, std::string* out);

// The HTTP status that answers `error` (400, 431 or 505).
int HttpStatusOfHeadError(HeadError error);

}  // namespace myops::server
