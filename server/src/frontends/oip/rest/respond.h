// How the HTTP/REST binding answers on a civetweb connection: one response in one write,
// errors as {"error": "<message>"} with the HTTP status of their code (the table in
// service.h), and request bodies read to their Content-Length.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

struct mg_connection;

namespace myops::server {

// The HTTP status for `code` (service.h's table).
int HttpStatusOf(absl::StatusCode code);

// Writes one response: status line, headers (`extra_headers`: whole lines, each ending
// in "\r\n") and `body` in one write, then the parts of `tail` (`tail_bytes` in all).
void Respond(mg_connection* conn, int status, absl::string_view body,
             const char* content_type = "application/json",
             const std::vector<absl::string_view>& tail = {}, int64_t tail_bytes = 0,
             absl::string_view extra_headers = "");

// {"error": status's message} with HTTP status `http_status`, or HttpStatusOf its code.
void RespondError(mg_connection* conn, int http_status, const absl::Status& status);
void RespondError(mg_connection* conn, const absl::Status& status);

// Reads the request body's `length` bytes into `into`; INVALID_ARGUMENT saying how many
// came when the client stops sending (or civetweb's request timeout cuts it off).
absl::Status ReadBody(mg_connection* conn, int64_t length, char* into);

}  // namespace myops::server
