// The HTTP/1.x request head parser (server/src/http/request_head.h): where a head ends,
// what a head means, and every refusal with its HeadError and HTTP status.
#include "http/request_head.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace myops::server {
namespace {

using ::testing::HasSubstr;

// Parses `head` (checked to be exactly one whole head first) into `*out`, whose views
// point into `head`: a temporary string is refused at compile time.
HeadError Parse(absl::string_view head, RequestHead* out, const char** why = nullptr) {
  EXPECT_EQ(RequestHeadLength(head), head.size()) << "not one whole head: " << head;
  return ParseRequestHead(head, out, why);
}
HeadError Parse(std::string&& head, RequestHead* out, const char** why = nullptr) = delete;

// A refusal: its kind, its status, and a reason for the response (holding `reason`).
void ExpectRefused(absl::string_view head, HeadError error, int status,
                   absl::string_view reason = "") {
  SCOPED_TRACE(std::string(head));
  RequestHead h;
  const char* why = nullptr;
  EXPECT_EQ(Parse(head, &h, &why), error);
  EXPECT_EQ(HttpStatusOfHeadError(error), status);
  ASSERT_NE(why, nullptr);
  EXPECT_GT(std::string(why).size(), 0u);
  EXPECT_THAT(why, HasSubstr(std::string(reason)));
}

// A head of `line` and `headers`, each ending in CRLF, and the blank line.
std::string Head(absl::string_view line, const std::vector<std::string>& headers = {}) {
  std::string s = absl::StrCat(line, "\r\n");
  for (const std::string& h : headers) absl::StrAppend(&s, h, "\r\n");
  return absl::StrCat(s, "\r\n");
}

TEST(RequestHeadLengthTest, IncompleteHeadsAreZero) {
  EXPECT_EQ(RequestHeadLength(""), 0u);
  EXPECT_EQ(RequestHeadLength("GET"), 0u);
  EXPECT_EQ(RequestHeadLength("GET / HTTP/1.1"), 0u);
  EXPECT_EQ(RequestHeadLength("GET / HTTP/1.1\r\n"), 0u);
  EXPECT_EQ(RequestHeadLength("GET / HTTP/1.1\r\nHost: x\r\n"), 0u);
  EXPECT_EQ(RequestHeadLength("GET / HTTP/1.1\r\nHost: x\r\n\r"), 0u);
  EXPECT_EQ(RequestHeadLength("GET / HTTP/1.1\n"), 0u);
  EXPECT_EQ(RequestHeadLength("GET / HTTP/1.1\nHost: x\n\r"), 0u);
  // A bare CR ends no line.
  EXPECT_EQ(RequestHeadLength("GET / HTTP/1.1\r\r"), 0u);
  EXPECT_EQ(RequestHeadLength("GET / HTTP/1.1\r\n\r\r\n"), 0u);
}

TEST(RequestHeadLengthTest, CrlfEndings) {
  const std::string head = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  EXPECT_EQ(RequestHeadLength(head), head.size());
  EXPECT_EQ(RequestHeadLength("GET / HTTP/1.1\r\n\r\n"), 18u);
}

TEST(RequestHeadLengthTest, BareLfEndings) {
  const std::string head = "GET / HTTP/1.1\nHost: x\n\n";
  EXPECT_EQ(RequestHeadLength(head), head.size());
  EXPECT_EQ(RequestHeadLength("GET / HTTP/1.1\n\n"), 16u);
}

TEST(RequestHeadLengthTest, MixedEndings) {
  EXPECT_EQ(RequestHeadLength("GET / HTTP/1.1\r\nHost: x\n\n"), 25u);
  EXPECT_EQ(RequestHeadLength("GET / HTTP/1.1\nHost: x\r\n\r\n"), 26u);
  EXPECT_EQ(RequestHeadLength("GET / HTTP/1.1\r\nHost: x\n\r\n"), 26u);
  EXPECT_EQ(RequestHeadLength("GET / HTTP/1.1\nHost: x\r\n\n"), 25u);
}

TEST(RequestHeadLengthTest, BytesAfterTheHeadAreNotCounted) {
  const std::string first = "POST /a HTTP/1.1\r\nContent-Length: 5\r\n\r\n";
  const std::string second = "GET /b HTTP/1.1\r\n\r\n";
  EXPECT_EQ(RequestHeadLength(first + "hello" + second), first.size());
  EXPECT_EQ(RequestHeadLength(first + "\r\n\r\n"), first.size());
  EXPECT_EQ(RequestHeadLength(second + second), second.size());
  EXPECT_EQ(RequestHeadLength(second + "GET /c HTT"), second.size());
}

TEST(RequestHeadLengthTest, EmptyLinesBeforeTheRequestLineBelongToTheHead) {
  const std::string head = "GET / HTTP/1.1\r\n\r\n";
  EXPECT_EQ(RequestHeadLength("\r\n" + head), 2 + head.size());
  EXPECT_EQ(RequestHeadLength("\r\n\r\n" + head), 4 + head.size());
  EXPECT_EQ(RequestHeadLength("\n\n\r\n" + head), 4 + head.size());
  // Only empty lines so far: no head yet.
  EXPECT_EQ(RequestHeadLength("\r\n\r\n"), 0u);
  EXPECT_EQ(RequestHeadLength("\n\n"), 0u);
  EXPECT_EQ(RequestHeadLength("\r\n\r"), 0u);
}

TEST(ParseRequestHeadTest, Get) {
  const std::string head =
      "GET /v2/models/m/ready?x=1&y=2 HTTP/1.1\r\n"
      "Host: localhost:8000\r\n"
      "User-Agent:curl/8.5.0\r\n"
      "Accept: \t */* \t\r\n"
      "X-Empty:\r\n"
      "\r\n";
  RequestHead h;
  const char* why = nullptr;
  ASSERT_EQ(Parse(head, &h, &why), HeadError::kNone);
  EXPECT_EQ(why, nullptr);
  EXPECT_EQ(h.method, "GET");
  EXPECT_EQ(h.target, "/v2/models/m/ready?x=1&y=2");
  EXPECT_EQ(h.path, "/v2/models/m/ready");
  EXPECT_EQ(h.minor_version, 1);
  ASSERT_EQ(h.headers.size(), 4u);
  EXPECT_EQ(h.headers[0].name, "Host");
  EXPECT_EQ(h.headers[0].value, "localhost:8000");
  EXPECT_EQ(h.headers[1].name, "User-Agent");
  EXPECT_EQ(h.headers[1].value, "curl/8.5.0");
  EXPECT_EQ(h.headers[2].name, "Accept");
  EXPECT_EQ(h.headers[2].value, "*/*");
  EXPECT_EQ(h.headers[3].name, "X-Empty");
  EXPECT_EQ(h.headers[3].value, "");
  EXPECT_EQ(h.content_length, -1);
  EXPECT_FALSE(h.chunked);
  EXPECT_TRUE(h.keep_alive);
  EXPECT_FALSE(h.expect_continue);
  // The views point into the head.
  EXPECT_EQ(h.method.data(), head.data());
  EXPECT_EQ(h.path.data(), h.target.data());

  ASSERT_NE(h.Find("host"), nullptr);
  EXPECT_EQ(h.Find("host"), &h.headers[0]);
  ASSERT_NE(h.Find("USER-AGENT"), nullptr);
  EXPECT_EQ(h.Find("USER-AGENT")->value, "curl/8.5.0");
  EXPECT_EQ(h.Find("x-empty"), &h.headers[3]);
  EXPECT_EQ(h.Find("Content-Length"), nullptr);
  EXPECT_EQ(h.Find("Hos"), nullptr);
  EXPECT_EQ(h.Find(""), nullptr);
}

TEST(ParseRequestHeadTest, TargetWithoutQueryIsItsOwnPath) {
  RequestHead h;
  const std::string head1 = Head("GET /v2/health/live HTTP/1.1");
  ASSERT_EQ(Parse(head1, &h), HeadError::kNone);
  EXPECT_EQ(h.target, "/v2/health/live");
  EXPECT_EQ(h.path, "/v2/health/live");
  const std::string head2 = Head("GET /a?b?c HTTP/1.1");
  ASSERT_EQ(Parse(head2, &h), HeadError::kNone);
  EXPECT_EQ(h.path, "/a");
  const std::string head3 = Head("OPTIONS * HTTP/1.1");
  ASSERT_EQ(Parse(head3, &h), HeadError::kNone);
  EXPECT_EQ(h.method, "OPTIONS");
  EXPECT_EQ(h.path, "*");
  const std::string head4 = Head("GET ?q HTTP/1.1");
  ASSERT_EQ(Parse(head4, &h), HeadError::kNone);
  EXPECT_EQ(h.target, "?q");
  EXPECT_EQ(h.path, "");
}

TEST(ParseRequestHeadTest, Post) {
  const std::string head =
      "POST /v2/models/simple/infer HTTP/1.1\r\n"
      "Host: localhost:8000\r\n"
      "User-Agent: python-requests/2.31.0\r\n"
      "Accept-Encoding: gzip, deflate\r\n"
      "Accept: */*\r\n"
      "Connection: keep-alive\r\n"
      "Content-Type: application/json\r\n"
      "content-length: 123\r\n"
      "\r\n";
  RequestHead h;
  ASSERT_EQ(RequestHeadLength(head + "{\"inputs\": []}"), head.size());
  ASSERT_EQ(Parse(head, &h), HeadError::kNone);
  EXPECT_EQ(h.method, "POST");
  EXPECT_EQ(h.target, "/v2/models/simple/infer");
  EXPECT_EQ(h.path, "/v2/models/simple/infer");
  EXPECT_EQ(h.minor_version, 1);
  ASSERT_EQ(h.headers.size(), 7u);
  EXPECT_EQ(h.headers[6].name, "content-length");
  EXPECT_EQ(h.headers[6].value, "123");
  EXPECT_EQ(h.Find("Accept-Encoding")->value, "gzip, deflate");
  EXPECT_EQ(h.Find("CONTENT-TYPE")->value, "application/json");
  EXPECT_EQ(h.content_length, 123);
  EXPECT_FALSE(h.chunked);
  EXPECT_TRUE(h.keep_alive);
  EXPECT_FALSE(h.expect_continue);
}

TEST(ParseRequestHeadTest, ContentLengthValues) {
  RequestHead h;
  const std::string head1 = Head("POST / HTTP/1.1", {"Content-Length: 0"});
  ASSERT_EQ(Parse(head1, &h), HeadError::kNone);
  EXPECT_EQ(h.content_length, 0);
  const std::string head2 = Head("POST / HTTP/1.1", {"Content-Length:  007 "});
  ASSERT_EQ(Parse(head2, &h), HeadError::kNone);
  EXPECT_EQ(h.content_length, 7);
  // 18 digits: the most accepted.
  const std::string head3 = Head("POST / HTTP/1.1", {"Content-Length: 999999999999999999"});
  ASSERT_EQ(Parse(head3, &h), HeadError::kNone);
  EXPECT_EQ(h.content_length, 999999999999999999);
}

TEST(ParseRequestHeadTest, BareLfHeadMeansTheSame) {
  constexpr absl::string_view kHead =
      "PUT /x?y HTTP/1.0\nContent-Length: 3\nConnection: keep-alive\n\n";
  RequestHead h;
  ASSERT_EQ(Parse(kHead, &h), HeadError::kNone);
  EXPECT_EQ(h.method, "PUT");
  EXPECT_EQ(h.target, "/x?y");
  EXPECT_EQ(h.path, "/x");
  EXPECT_EQ(h.minor_version, 0);
  ASSERT_EQ(h.headers.size(), 2u);
  EXPECT_EQ(h.headers[1].value, "keep-alive");
  EXPECT_EQ(h.content_length, 3);
  EXPECT_TRUE(h.keep_alive);
}

TEST(ParseRequestHeadTest, AReusedHeadIsReset) {
  RequestHead h;
  const std::string head1 = Head("POST / HTTP/1.1", {"Content-Length: 5", "Expect: 100-continue"});
  ASSERT_EQ(Parse(head1, &h), HeadError::kNone);
  EXPECT_EQ(h.content_length, 5);
  EXPECT_TRUE(h.expect_continue);
  const std::string head2 = Head("POST / HTTP/1.1", {"Transfer-Encoding: chunked"});
  ASSERT_EQ(Parse(head2, &h), HeadError::kNone);
  EXPECT_TRUE(h.chunked);
  const std::string head3 = Head("GET / HTTP/1.0");
  ASSERT_EQ(Parse(head3, &h), HeadError::kNone);
  EXPECT_EQ(h.headers.size(), 0u);
  EXPECT_EQ(h.content_length, -1);
  EXPECT_FALSE(h.chunked);
  EXPECT_FALSE(h.expect_continue);
  EXPECT_FALSE(h.keep_alive);
  EXPECT_EQ(h.minor_version, 0);
  const std::string head4 = Head("GET / HTTP/1.1");
  ASSERT_EQ(Parse(head4, &h), HeadError::kNone);
  EXPECT_TRUE(h.keep_alive);
  EXPECT_EQ(h.minor_version, 1);
}

TEST(ParseRequestHeadTest, EmptyLinesBeforeTheRequestLineAreIgnored) {
  for (const char* lead : {"\r\n", "\n", "\r\n\r\n", "\n\r\n\n"}) {
    SCOPED_TRACE(absl::CEscape(lead));
    RequestHead h;
    const std::string head = absl::StrCat(lead, Head("GET /x HTTP/1.1", {"Host: h"}));
    ASSERT_EQ(Parse(head, &h), HeadError::kNone);
    EXPECT_EQ(h.method, "GET");
    EXPECT_EQ(h.target, "/x");
    ASSERT_EQ(h.headers.size(), 1u);
    EXPECT_EQ(h.headers[0].value, "h");
  }
}

// Keep-alive: HTTP/1.1 unless "Connection: close"; HTTP/1.0 only with "Connection:
// keep-alive".
TEST(ParseRequestHeadTest, KeepAlive) {
  struct Case {
    const char* version;
    std::vector<std::string> headers;
    bool keep_alive;
  };
  const Case cases[] = {
      {"HTTP/1.0", {}, false},
      {"HTTP/1.0", {"Connection: keep-alive"}, true},
      {"HTTP/1.0", {"connection: Keep-Alive"}, true},
      {"HTTP/1.0", {"Connection: keep-alive, close"}, false},
      {"HTTP/1.0", {"Connection: Upgrade"}, false},
      {"HTTP/1.1", {}, true},
      {"HTTP/1.1", {"Connection: close"}, false},
      {"HTTP/1.1", {"Connection: CLOSE"}, false},
      {"HTTP/1.1", {"Connection: keep-alive"}, true},
      {"HTTP/1.1", {"Connection: keep-alive, Upgrade"}, true},
      {"HTTP/1.1", {"Connection: Upgrade,close"}, false},
      {"HTTP/1.1", {"Connection: Upgrade", "Connection: close"}, false},
      {"HTTP/1.1", {"Connection: closed"}, true},
      {"HTTP/1.0", {"Connection: keep-alive, Upgrade"}, true},
      {"HTTP/1.0", {"Connection: Upgrade", "Connection: keep-alive"}, true},
      {"HTTP/1.0", {"Connection: keep-alives"}, false},
  };
  for (const Case& c : cases) {
    const std::string head = Head(absl::StrCat("GET / ", c.version), c.headers);
    SCOPED_TRACE(head);
    RequestHead h;
    ASSERT_EQ(Parse(head, &h), HeadError::kNone);
    EXPECT_EQ(h.minor_version, c.version[7] - '0');
    EXPECT_EQ(h.keep_alive, c.keep_alive);
  }
}

TEST(ParseRequestHeadTest, ExpectContinueOnlyInHttp11) {
  RequestHead h;
  const std::string head1 = Head("POST / HTTP/1.1", {"Content-Length: 9", "Expect: 100-continue"});
  ASSERT_EQ(Parse(head1, &h), HeadError::kNone);
  EXPECT_TRUE(h.expect_continue);
  const std::string head2 = Head("POST / HTTP/1.1", {"expect:  100-Continue "});
  ASSERT_EQ(Parse(head2, &h), HeadError::kNone);
  EXPECT_TRUE(h.expect_continue);
  const std::string head3 = Head("POST / HTTP/1.0", {"Content-Length: 9", "Expect: 100-continue"});
  ASSERT_EQ(Parse(head3, &h), HeadError::kNone);
  EXPECT_FALSE(h.expect_continue);
  const std::string head4 = Head("POST / HTTP/1.1", {"Expect: 200-ok"});
  ASSERT_EQ(Parse(head4, &h), HeadError::kNone);
  EXPECT_FALSE(h.expect_continue);
  const std::string head5 = Head("POST / HTTP/1.1", {"Expect: 100-continue, x"});
  ASSERT_EQ(Parse(head5, &h), HeadError::kNone);
  EXPECT_FALSE(h.expect_continue);
  const std::string head6 = Head("POST / HTTP/1.1");
  ASSERT_EQ(Parse(head6, &h), HeadError::kNone);
  EXPECT_FALSE(h.expect_continue);
}

TEST(ParseRequestHeadTest, TransferEncodingAloneIsChunkedAndCloses) {
  for (const char* te : {"Transfer-Encoding: chunked", "transfer-encoding: gzip, chunked",
                         "Transfer-Encoding: identity"}) {
    SCOPED_TRACE(te);
    RequestHead h;
    const std::string head = Head("POST /infer HTTP/1.1", {"Connection: keep-alive", te});
    ASSERT_EQ(Parse(head, &h), HeadError::kNone);
    EXPECT_TRUE(h.chunked);
    EXPECT_FALSE(h.keep_alive);
    EXPECT_EQ(h.content_length, -1);
  }
}

TEST(ParseRequestHeadTest, EqualContentLengthsAreOne) {
  RequestHead h;
  const std::string head = Head("POST / HTTP/1.1", {"Content-Length: 42", "content-length: 042"});
  ASSERT_EQ(Parse(head, &h), HeadError::kNone);
  EXPECT_EQ(h.content_length, 42);
  EXPECT_EQ(h.headers.size(), 2u);
}

TEST(ParseRequestHeadTest, ExactlyMaxHeadersAreAccepted) {
  std::vector<std::string> headers;
  for (size_t i = 0; i < kMaxHeaders; ++i) headers.push_back(absl::StrCat("X-H", i, ": ", i));
  RequestHead h;
  const std::string head = Head("GET / HTTP/1.1", headers);
  ASSERT_EQ(Parse(head, &h), HeadError::kNone);
  ASSERT_EQ(h.headers.size(), kMaxHeaders);
  EXPECT_EQ(h.headers.back().name, absl::StrCat("X-H", kMaxHeaders - 1));
  EXPECT_EQ(h.Find(absl::StrCat("x-h", kMaxHeaders - 1)), &h.headers.back());
}

TEST(ParseRequestHeadTest, StatusOfEachError) {
  EXPECT_EQ(HttpStatusOfHeadError(HeadError::kMalformed), 400);
  EXPECT_EQ(HttpStatusOfHeadError(HeadError::kBadContentLength), 400);
  EXPECT_EQ(HttpStatusOfHeadError(HeadError::kVersion), 505);
  EXPECT_EQ(HttpStatusOfHeadError(HeadError::kTooManyHeaders), 431);
}

TEST(ParseRequestHeadRefusalTest, BadRequestLine) {
  for (const char* line : {
           "GET",                    // no target, no version
           "GET /",                  // no version
           "GET / ",                 // empty version
           " / HTTP/1.1",            // empty method
           "GET  HTTP/1.1",          // empty target
           "GET  / HTTP/1.1",        // two spaces
           "GET\t/ HTTP/1.1",        // tab instead of space
           "GET /\tHTTP/1.1",        // tab instead of space
           "GET\t/\tHTTP/1.1",       // tabs only
           "GET /a\x01 HTTP/1.1",    // control in the target
           "GET /a\x7f HTTP/1.1",    // DEL in the target
           "GET /a\rb HTTP/1.1",     // CR in the target
           "G(T / HTTP/1.1",         // non-token method
           "GET: / HTTP/1.1",        // non-token method
           "G\xc3\x89T / HTTP/1.1",  // non-ASCII method
           "GET / HTTPS/1.1",        // not HTTP/
           "GET / http/1.1",         // HTTP is case-sensitive
           "GET / 1.1",              // no HTTP/
           "Host: x",                // a header where the request line should be
       }) {
    ExpectRefused(Head(line, {"Host: x"}), HeadError::kMalformed, 400);
  }
  // Empty lines only (RequestHeadLength never measures such a head: it waits for more).
  RequestHead h;
  const char* why = nullptr;
  EXPECT_EQ(ParseRequestHead("\r\n\r\n", &h, &why), HeadError::kMalformed);
  EXPECT_NE(why, nullptr);
}

TEST(ParseRequestHeadRefusalTest, VersionOtherThan10And11) {
  for (const char* version :
       {"HTTP/2.0", "HTTP/1.2", "HTTP/0.9", "HTTP/3", "HTTP/1.10", "HTTP/1.1 ", "HTTP/1.1x",
        "HTTP/",
        // What follows the second space is read as the version: a trailing part too.
        "HTTP/1.1 HTTP/1.1"}) {
    ExpectRefused(Head(absl::StrCat("GET / ", version)), HeadError::kVersion, 505);
  }
}

TEST(ParseRequestHeadRefusalTest, BadHeaderLine) {
  for (const char* header : {
           "Host",         // no colon
           "Host x",       // no colon
           ": x",          // empty name
           "Host : x",     // space before the colon: the name is not a token
           "Host\t: x",    // tab before the colon
           "Ho st: x",     // space in the name
           "Ho(st: x",     // non-token name
           "Host\x01: x",  // control in the name
           "X: a\x01 b",   // control in the value
           "X: a\x7f",     // DEL in the value
           "X: a\rb",      // bare CR in the value
           "X: a\x1f",     // unit separator in the value
       }) {
    ExpectRefused(Head("GET / HTTP/1.1", {"Host: h", header}), HeadError::kMalformed, 400);
  }
  // NUL in the value.
  ExpectRefused(Head("GET / HTTP/1.1", {std::string("X: a\0b", 6)}), HeadError::kMalformed, 400);
  // Obsolete line folding: a line that starts with a space or tab, a header's continuation
  // or whitespace before the first header.
  ExpectRefused("GET / HTTP/1.1\r\nX-Long: a\r\n  b\r\n\r\n", HeadError::kMalformed, 400, "folded");
  ExpectRefused("GET / HTTP/1.1\nX-Long: a\n\tb\n\n", HeadError::kMalformed, 400, "folded");
  ExpectRefused(Head("GET / HTTP/1.1", {" Host: x"}), HeadError::kMalformed, 400, "folded");
  ExpectRefused(Head("GET / HTTP/1.1", {"\tHost: x"}), HeadError::kMalformed, 400, "folded");
  // A CR not before LF at the end of a line is no line ending.
  ExpectRefused("GET / HTTP/1.1\r\nX: a\r\r\n\r\n", HeadError::kMalformed, 400);
}

TEST(ParseRequestHeadRefusalTest, ContentLengthNotDigits) {
  for (const char* value :
       {"+5", "-1", "5 5", " ", "", "0x10", "1a", "a", "5,5", "5, 5", "1.0", "1e3", "\t",
        "1000000000000000000", "9223372036854775807", "99999999999999999999999"}) {
    SCOPED_TRACE(value);
    ExpectRefused(Head("POST / HTTP/1.1", {absl::StrCat("Content-Length: ", value)}),
                  HeadError::kBadContentLength, 400);
  }
  // The refusal stands after a valid one.
  ExpectRefused(Head("POST / HTTP/1.1", {"Content-Length: 5", "Content-Length: x"}),
                HeadError::kBadContentLength, 400);
}

TEST(ParseRequestHeadRefusalTest, ContentLengthsThatDiffer) {
  ExpectRefused(Head("POST / HTTP/1.1", {"Content-Length: 5", "Content-Length: 6"}),
                HeadError::kBadContentLength, 400);
  ExpectRefused(Head("POST / HTTP/1.1", {"Content-Length: 0", "content-length: 1"}),
                HeadError::kBadContentLength, 400);
  ExpectRefused(
      Head("POST / HTTP/1.1", {"Content-Length: 5", "Content-Length: 5", "Content-Length: 50"}),
      HeadError::kBadContentLength, 400);
}

TEST(ParseRequestHeadRefusalTest, ContentLengthWithTransferEncoding) {
  ExpectRefused(Head("POST / HTTP/1.1", {"Content-Length: 5", "Transfer-Encoding: chunked"}),
                HeadError::kBadContentLength, 400);
  ExpectRefused(Head("POST / HTTP/1.1", {"transfer-encoding: chunked", "CONTENT-LENGTH: 0"}),
                HeadError::kBadContentLength, 400);
  ExpectRefused(Head("POST / HTTP/1.0", {"Transfer-Encoding: identity", "Content-Length: 3"}),
                HeadError::kBadContentLength, 400);
}

TEST(ParseRequestHeadRefusalTest, MoreThanMaxHeaders) {
  std::vector<std::string> headers;
  for (size_t i = 0; i <= kMaxHeaders; ++i) headers.push_back(absl::StrCat("X-H", i, ": ", i));
  ExpectRefused(Head("GET / HTTP/1.1", headers), HeadError::kTooManyHeaders, 431);
  for (size_t i = 0; i < 50; ++i) headers.push_back("X: y");
  ExpectRefused(Head("GET / HTTP/1.1", headers), HeadError::kTooManyHeaders, 431);
}

// The same refusals with bare LF endings.
TEST(ParseRequestHeadRefusalTest, BareLfHeads) {
  ExpectRefused("GET /\n\n", HeadError::kMalformed, 400);
  ExpectRefused("GET / HTTP/2.0\n\n", HeadError::kVersion, 505);
  ExpectRefused("GET / HTTP/1.1\nHost : x\n\n", HeadError::kMalformed, 400);
  ExpectRefused("POST / HTTP/1.1\nContent-Length: 1\nContent-Length: 2\n\n",
                HeadError::kBadContentLength, 400);
}

}  // namespace
}  // namespace myops::server
