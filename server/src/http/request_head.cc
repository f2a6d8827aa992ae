// The HTTP/1.x request head parser (http/request_head.h).
#include "http/request_head.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"

namespace myops::server {
namespace {

// RFC 9110's tchar.
bool IsTokenChar(char c) {
  if (absl::ascii_isalnum(static_cast<unsigned char>(c))) return true;
  switch (c) {
    case '!':
    case '#':
    case '$':
    case '%':
    case '&':
    case '\'':
    case '*':
    case '+':
    case '-':
    case '.':
    case '^':
    case '_':
    case '`':
    case '|':
    case '~':
      return true;
    default:
      return false;
  }
}

bool IsToken(absl::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!IsTokenChar(c)) return false;
  }
  return true;
}

// Visible ASCII (a request target holds no spaces or controls).
bool IsTarget(absl::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f) return false;
  }
  return true;
}

// A field value: no controls but horizontal tab (bytes >= 0x80 pass, as obs-text).
bool IsFieldValue(absl::string_view s) {
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && u != '\t') || u == 0x7f) return false;
  }
  return true;
}

absl::string_view TrimSpaces(absl::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The next line of `*rest` without its ending (CRLF or LF), which is consumed.
absl::string_view NextLine(absl::string_view* rest) {
  const size_t lf = rest->find('\n');
  absl::string_view line = rest->substr(0, lf);
  rest->remove_prefix(lf == absl::string_view::npos ? rest->size() : lf + 1);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

// Whether the comma-separated `list` holds `option` (case-insensitive).
bool ListHas(absl::string_view list, absl::string_view option) {
  while (!list.empty()) {
    const size_t comma = list.find(',');
    if (absl::EqualsIgnoreCase(TrimSpaces(list.substr(0, comma)), option)) return true;
    if (comma == absl::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

HeadError Fail(HeadError error, const char* what, const char** why) {
  if (why != nullptr) *why = what;
  return error;
}

}  // namespace

const HttpHeader* RequestHead::Find(absl::string_view name) const {
  for (const HttpHeader& h : headers) {
    if (absl::EqualsIgnoreCase(h.name, name)) return &h;
  }
  return nullptr;
}

size_t RequestHeadLength(absl::string_view bytes, size_t searched) {
  // Empty lines before the request line belong to the head (ParseRequestHead skips them);
  // they do not end it.
  size_t start = 0;
  while (start < bytes.size()) {
    if (bytes[start] == '\n') {
      start += 1;
    } else if (bytes[start] == '\r' && start + 1 < bytes.size() && bytes[start + 1] == '\n') {
      start += 2;
    } else {
      break;
    }
  }
  // The head ends at an empty line: "\n\n" or "\n\r\n" (CRLF or LF endings, mixed); an
  // end that `searched` split begins at most two bytes before it.
  start = std::max(start, searched > 2 ? searched - 2 : 0);
  for (size_t i = bytes.find('\n', start); i != absl::string_view::npos;
       i = bytes.find('\n', i + 1)) {
    if (i + 1 < bytes.size() && bytes[i + 1] == '\n') return i + 2;
    if (i + 2 < bytes.size() && bytes[i + 1] == '\r' && bytes[i + 2] == '\n') return i + 3;
  }
  return 0;
}

HeadError ParseRequestHead(absl::string_view head, RequestHead* out, const char** why) {
  out->headers.clear();
  out->content_length = -1;
  out->chunked = false;
  out->expect_continue = false;
  absl::string_view rest = head;
  // RFC 9112 2.2: empty lines before the request line are ignored.
  absl::string_view line = NextLine(&rest);
  while (line.empty() && !rest.empty()) line = NextLine(&rest);
  // method SP target SP HTTP/1.x
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == absl::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == absl::string_view::npos) {
    return Fail(HeadError::kMalformed, "the request line is not METHOD TARGET HTTP/1.x", why);
  }
  out->method = line.substr(0, sp1);
  out->target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const absl::string_view version = line.substr(sp2 + 1);
  if (!IsToken(out->method)) return Fail(HeadError::kMalformed, "the method is not a token", why);
  if (!IsTarget(out->target)) {
    return Fail(HeadError::kMalformed, "the request target is empty or holds a control", why);
  }
  if (!absl::StartsWith(version, "HTTP/")) {
    return Fail(HeadError::kMalformed, "the request line does not end in HTTP/1.x", why);
  }
  if (version == "HTTP/1.1") {
    out->minor_version = 1;
  } else if (version == "HTTP/1.0") {
    out->minor_version = 0;
  } else {
    return Fail(HeadError::kVersion, "only HTTP/1.0 and HTTP/1.1 are served", why);
  }
  out->path = out->target.substr(0, out->target.find('?'));
  bool close = false, keep_alive = false, transfer_encoding = false;
  for (line = NextLine(&rest); !line.empty(); line = NextLine(&rest)) {
    if (line.front() == ' ' || line.front() == '\t') {
      return Fail(HeadError::kMalformed, "a header line is folded (obsolete line folding)", why);
    }
    const size_t colon = line.find(':');
    if (colon == absl::string_view::npos || !IsToken(line.substr(0, colon))) {
      return Fail(HeadError::kMalformed, "a header line is not NAME: VALUE", why);
    }
    const HttpHeader h{line.substr(0, colon), TrimSpaces(line.substr(colon + 1))};
    if (!IsFieldValue(h.value)) {
      return Fail(HeadError::kMalformed, "a header value holds a control character", why);
    }
    if (out->headers.size() == kMaxHeaders) {
      return Fail(HeadError::kTooManyHeaders, "the request has too many header lines", why);
    }
    out->headers.push_back(h);
    if (absl::EqualsIgnoreCase(h.name, "Content-Length")) {
      uint64_t n = 0;
      const bool digits =
          !h.value.empty() && h.value.find_first_not_of("0123456789") == absl::string_view::npos;
      if (!digits || h.value.size() > 18 || !absl::SimpleAtoi(h.value, &n)) {
        return Fail(HeadError::kBadContentLength, "Content-Length is not a number of bytes", why);
      }
      if (out->content_length >= 0 && static_cast<uint64_t>(out->content_length) != n) {
        return Fail(HeadError::kBadContentLength, "two Content-Length headers differ", why);
      }
      out->content_length = static_cast<int64_t>(n);
    } else if (absl::EqualsIgnoreCase(h.name, "Transfer-Encoding")) {
      transfer_encoding = true;
    } else if (absl::EqualsIgnoreCase(h.name, "Connection")) {
      close = close || ListHas(h.value, "close");
      keep_alive = keep_alive || ListHas(h.value, "keep-alive");
    } else if (absl::EqualsIgnoreCase(h.name, "Expect")) {
      out->expect_continue = absl::EqualsIgnoreCase(h.value, "100-continue");
    }
  }
  if (transfer_encoding && out->content_length >= 0) {
    return Fail(HeadError::kBadContentLength, "a request has Content-Length and Transfer-Encoding",
                why);
  }
  out->chunked = transfer_encoding;
  out->keep_alive = !close && (out->minor_version == 1 || keep_alive) && !transfer_encoding;
  out->expect_continue = out->expect_continue && out->minor_version == 1;
  return HeadError::kNone;
}

bool DecodePath(absl::string_view path, std::string* out) {
  out->clear();
  out->reserve(path.size());
  for (size_t i = 0; i < path.size(); ++i) {
    if (path[i] != '%') {
      out->push_back(path[i]);
      continue;
    }
    if (i + 2 >= path.size() || !absl::ascii_isxdigit(static_cast<unsigned char>(path[i + 1])) ||
        !absl::ascii_isxdigit(static_cast<unsigned char>(path[i + 2]))) {
      return false;
    }
    auto hex = [](char c) { return absl::ascii_isdigit(c) ? c - '0' : (c | 0x20) - 'a' + 10; };
    const char decoded = static_cast<char>(hex(path[i + 1]) * 16 + hex(path[i + 2]));
    if (decoded == '\0') return false;
    out->push_back(decoded);
    i += 2;
  }
  return true;
}

int HttpStatusOfHeadError(HeadError error) {
  switch (error) {
    case HeadError::kNone:
      return 200;
    case HeadError::kVersion:
      return 505;
    case HeadError::kTooManyHeaders:
      return 431;
    default:
      return 400;
  }
}

}  // namespace myops::server
