// Fuzz target: the REST port's HTTP/1.x request head parser (server/src/http/
// request_head.h), fed the bytes a client sends. Beyond "no crash, no sanitizer report",
// checks:
//  - RequestHeadLength: 0 or at most the input's size; a found head ends in "\n\n" or
//    "\n\r\n", holds more than empty lines (those before the request line do not end it),
//    measures itself again (idempotent) and keeps its length whatever follows it; every
//    shorter prefix of the head holds no head yet (0), as bytes arrive a few at a time.
//  - ParseRequestHead (on the head, or on the whole input when it holds none): an error has
//    a reason and an HTTP status of 400, 431 or 505. An accepted head's views lie inside the
//    bytes parsed; the method and header names are tokens (non-empty, no ':', space or
//    control); the target has no space or control and the path is the target's prefix
//    without '?'; header values are trimmed and have no control but tab; at most
//    kMaxHeaders headers; content_length >= -1; chunked implies !keep_alive and no
//    Content-Length; Expect: 100-continue only in HTTP/1.1.
//  - A resumed search (RequestHeadLength with `searched`) finds what one search finds.
//  - DecodePath (on an accepted head's path): never longer, no NUL, a path without '%'
//    unchanged and never refused.
//  - Line endings: the head with every CRLF turned into LF measures as one whole head and
//    parses to the same result (error kind, method, target, path, version, headers,
//    content_length, chunked, keep_alive, expect_continue). Only heads without "\r\r\n":
//    there, turning CRLF into LF leaves a new CRLF behind (a CR that was a control in a
//    line becomes part of its ending), so the two heads rightly differ.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/string_view.h"
#include "http/request_head.h"

namespace {

namespace s = myops::server;

[[noreturn]] void Fail(const char* what) {
  fprintf(stderr, "fuzz property violated: %s\n", what);
  __builtin_trap();
}

bool IsControl(char c) {
  const auto u = static_cast<unsigned char>(c);
  return u < 0x20 || u == 0x7f;
}

bool Inside(absl::string_view view, absl::string_view bytes) {
  return view.data() >= bytes.data() && view.data() + view.size() <= bytes.data() + bytes.size();
}

// A non-empty name without ':', space or control (a weaker check than RFC 9110's token,
// independent of the parser's own).
bool IsNameLike(absl::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c == ':' || c == ' ' || IsControl(c) || static_cast<unsigned char>(c) >= 0x80) {
      return false;
    }
  }
  return true;
}

void CheckLength(absl::string_view input) {
  const size_t n = s::RequestHeadLength(input);
  // Resuming a search (as the server does when a head arrives in pieces) finds what one
  // search of the whole finds.
  for (size_t split : {input.size() / 3, input.size() / 2, input.size() - input.size() / 4}) {
    if (s::RequestHeadLength(input.substr(0, split)) == 0 &&
        s::RequestHeadLength(input, split) != n) {
      Fail("a resumed search differs from a whole one");
    }
  }
  if (n == 0) return;
  if (n > input.size()) Fail("RequestHeadLength beyond the input");
  const absl::string_view head = input.substr(0, n);
  if (!absl::EndsWith(head, "\n\n") && !absl::EndsWith(head, "\n\r\n")) {
    Fail("a head that does not end in an empty line");
  }
  if (absl::StrReplaceAll(head, {{"\r\n", ""}, {"\n", ""}}).empty()) {
    Fail("a head of empty lines only (they precede a request line, not end a head)");
  }
  if (s::RequestHeadLength(head) != n) Fail("RequestHeadLength of the head alone differs");
  if (s::RequestHeadLength(head.substr(0, n - 1)) != 0) Fail("a head's prefix holds a head");
  if (s::RequestHeadLength(head.substr(0, n / 2)) != 0) Fail("a head's half holds a head");
  std::string more(head);
  more.append("\r\n\r\nGET / HTTP/1.1\r\n\r\n");
  if (s::RequestHeadLength(more) != n) Fail("bytes after a head changed its length");
  more.assign(head.data(), head.size());
  more.append(input.data(), input.size());
  if (s::RequestHeadLength(more) != n) Fail("bytes after a head changed its length");
}

// Parses `bytes`, checking the result's invariants; returns the error.
s::HeadError ParseChecked(absl::string_view bytes, s::RequestHead* h) {
  const char* why = nullptr;
  const s::HeadError e = s::ParseRequestHead(bytes, h, &why);
  if (e != s::HeadError::kNone) {
    if (why == nullptr || why[0] == '\0') Fail("an error without a reason");
    const int status = s::HttpStatusOfHeadError(e);
    if (status != 400 && status != 431 && status != 505) Fail("an error's status");
    return e;
  }
  if (!Inside(h->method, bytes) || !Inside(h->target, bytes) || !Inside(h->path, bytes)) {
    Fail("a request line view outside the input");
  }
  if (!IsNameLike(h->method)) Fail("a method that is not a token");
  if (h->target.empty()) Fail("an empty target");
  for (char c : h->target) {
    if (c == ' ' || IsControl(c)) Fail("a space or control in the target");
  }
  if (h->path.data() != h->target.data() || !absl::StartsWith(h->target, h->path) ||
      h->path.find('?') != absl::string_view::npos ||
      (h->path.size() < h->target.size() && h->target[h->path.size()] != '?')) {
    Fail("the path is not the target up to '?'");
  }
  if (h->minor_version != 0 && h->minor_version != 1) Fail("a minor version not 0 or 1");
  if (h->headers.size() > s::kMaxHeaders) Fail("more than kMaxHeaders headers");
  for (const s::HttpHeader& header : h->headers) {
    if (!Inside(header.name, bytes) || !Inside(header.value, bytes)) {
      Fail("a header view outside the input");
    }
    if (!IsNameLike(header.name)) Fail("a header name that is not a token");
    for (char c : header.value) {
      if (IsControl(c) && c != '\t') Fail("a control in a header value");
    }
    if (!header.value.empty() && (header.value.front() == ' ' || header.value.front() == '\t' ||
                                  header.value.back() == ' ' || header.value.back() == '\t')) {
      Fail("an untrimmed header value");
    }
    if (h->Find(header.name) == nullptr) Fail("Find misses a header");
  }
  if (h->content_length < -1) Fail("content_length below -1");
  if ((h->content_length >= 0) != (h->Find("content-length") != nullptr)) {
    Fail("content_length and the Content-Length header disagree");
  }
  if (h->chunked != (h->Find("transfer-encoding") != nullptr)) {
    Fail("chunked and the Transfer-Encoding header disagree");
  }
  if (h->chunked && (h->keep_alive || h->content_length != -1)) {
    Fail("chunked with keep-alive or a Content-Length");
  }
  if (h->expect_continue && h->minor_version != 1) Fail("Expect: 100-continue in HTTP/1.0");
  return e;
}

void CheckSame(const s::RequestHead& a, const s::RequestHead& b) {
  if (a.method != b.method || a.target != b.target || a.path != b.path ||
      a.minor_version != b.minor_version) {
    Fail("CRLF and LF request lines differ");
  }
  if (a.headers.size() != b.headers.size()) Fail("CRLF and LF header counts differ");
  for (size_t i = 0; i < a.headers.size(); ++i) {
    if (a.headers[i].name != b.headers[i].name || a.headers[i].value != b.headers[i].value) {
      Fail("CRLF and LF headers differ");
    }
  }
  if (a.content_length != b.content_length || a.chunked != b.chunked ||
      a.keep_alive != b.keep_alive || a.expect_continue != b.expect_continue) {
    Fail("CRLF and LF heads mean different things");
  }
}

}  // namespace

// DecodePath: a decoded path is no longer than the path and holds no NUL; one without
// '%' decodes to itself; a refused one holds a '%' not followed by two hex digits or one
// that decodes to NUL.
void CheckDecodedPath(absl::string_view path) {
  std::string decoded;
  if (s::DecodePath(path, &decoded)) {
    if (decoded.size() > path.size()) Fail("a decoded path grew");
    if (decoded.find('\0') != std::string::npos) Fail("a decoded path holds a NUL");
    if (path.find('%') == absl::string_view::npos && decoded != path) Fail("a plain path changed");
  } else if (path.find('%') == absl::string_view::npos) {
    Fail("a path without '%' was refused");
  }
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view input(reinterpret_cast<const char*>(data), size);
  CheckLength(input);
  const size_t n = s::RequestHeadLength(input);
  // A copy of exactly the bytes parsed, so that ASan sees a read past the head.
  const std::string bytes(n != 0 ? input.substr(0, n) : input);
  s::RequestHead h;
  const s::HeadError e = ParseChecked(bytes, &h);
  if (e == s::HeadError::kNone) CheckDecodedPath(h.path);
  if (n == 0 || absl::StrContains(bytes, "\r\r\n")) return 0;

  const std::string lf = absl::StrReplaceAll(bytes, {{"\r\n", "\n"}});
  if (s::RequestHeadLength(lf) != lf.size()) Fail("the LF head is not one whole head");
  s::RequestHead g;
  const s::HeadError f = ParseChecked(lf, &g);
  if (e != f) Fail("CRLF and LF heads parse to different errors");
  if (e == s::HeadError::kNone) CheckSame(h, g);
  return 0;
}
