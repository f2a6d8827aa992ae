// How the HTTP/REST binding answers on an HTTP exchange (http/server.h): one response in one write,
// errors as {"error": "<message>"} with the HTTP status of their code (the table in
// service.h), and request bodies read to their Content-Length.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace myops::server {

class HttpExchange;

// The HTTP status for `code` (service.h's table).
int HttpStatusOf(absl::StatusCode code);

// A response's status line, headers (`extra_headers`: whole lines, each ending in "\r\n")
// and `body`, for a body of `body` and `tail_bytes` more.
std::string ResponseText(int status, absl::string_view body, const char* content_type,
                         int64_t tail_bytes = 0, absl::string_view extra_headers = "");

// Writes one response: ResponseText in one write, then the parts of `tail` (`tail_bytes`
// in all).
void Respond(HttpExchange* conn, int status, absl::string_view body,
             const char* content_type = "application/json",
             const std::vector<absl::string_view>& tail = {}, int64_t tail_bytes = 0,
             absl::string_view extra_headers = "");

// {"error": status's message} with HTTP status `http_status`, or HttpStatusOf its code.
void RespondError(HttpExchange* conn, int http_status, const absl::Status& status);
void RespondError(HttpExchange* conn, const absl::Status& status);

// Reads the request body's `length` bytes into `into`; INVALID_ARGUMENT saying how many
// came when the client stops sending (the server's progress rule, --stall-timeout-ms,
// cuts a silent or trickling client off).
absl::Status ReadBody(HttpExchange* conn, int64_t length, char* into);

// ReadBody in steps, each granted first: `grant(total)` is asked to hold `total` bytes of
// the body before they are read, `total` at most twice what has arrived (64 KiB at
// first), so that what a body holds is backed by the bytes its client sent. Its refusal
// is returned as is.
absl::Status ReadBodyInSteps(HttpExchange* conn, int64_t length, char* into,
                             const std::function<absl::Status(int64_t total)>& grant);

}  // namespace myops::server
