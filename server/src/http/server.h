// The REST port's HTTP/1.1 server: an event loop that owns every connection while it is
// idle or sends its request head, and a pool of workers that serve whole heads.
//
// Why not a thread per connection (civetweb, which the server used before): a client that
// sends its head a byte at a time held a worker for as long as it liked, and a hundred
// such connections stopped every request, health included. Here:
//  - The loop (one thread, epoll) accepts, does the TLS handshake and reads heads. A head
//    must arrive whole within stall_timeout_ms of its first byte (later bytes do not
//    extend it) and within max_head_bytes; an idle keep-alive connection is closed after
//    keep_alive_timeout_ms. What a connection holds on the loop is its head buffer, at most
//    max_head_bytes.
//  - Connections are bounded in all (max_connections) and per client address
//    (max_connections_per_address): one over is answered 503 and closed.
//  - Requests the inline handler answers (health: a few bytes, no body, never blocking)
//    are answered on the loop, so they answer while every worker is busy.
//  - A whole head goes to a worker (a bounded queue; full: 503), which runs the handler:
//    it reads the body and writes the response with blocking calls. Both must move at
//    least progress_bytes (or all that is left) per stall_timeout_ms: a client that sends
//    or reads a trickle is cut off and its request's memory returns.
//  - Only the loop closes connections; a worker hands its connection back when done.
// TLS (options.tls): every connection of the port, the same certificate and client rule
// as the gRPC port (http/tls.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "http/listener.h"
#include "http/request_head.h"
#include "http/tls.h"

namespace myops::server {

struct HttpServerOptions {
  ListenAddress listen;  // port 0: any free port
  HttpTlsFiles tls;      // empty cert_file: plain HTTP
  int workers = 32;
  int queued_requests = 64;  // whole heads waiting for a worker
  int max_connections = 1024;
  int max_connections_per_address = 64;  // 0: unbounded
  int64_t stall_timeout_ms = 10000;
  int64_t keep_alive_timeout_ms = 5000;
  int64_t progress_bytes = 16 << 10;
  size_t max_head_bytes = 16 << 10;
};

struct HttpServerImpl;
struct HttpConnection;

// One request on a worker: its head, its body to read, its response to write. Used by
// the handler on the worker's thread only; valid during the handler's call.
class HttpExchange {
 public:
  const RequestHead& head() const;
  absl::string_view method() const { return head().method; }
  absl::string_view path() const { return head().path; }
  // The first header `name`'s value, NUL-terminated; nullptr when it is absent.
  const char* header(absl::string_view name) const;
  int64_t content_length() const { return head().content_length; }
  // The client's "address:port".
  const std::string& peer() const;
  // The client's IP address.
  const std::string& address() const;

  // Reads at most `n` bytes of the body into `into`, waiting for at least one: the count
  // read, or 0 at the body's end, or when the client closed its side, left, sent too
  // little in time (the progress rule above) or broke TLS; then the connection closes
  // after the handler (a response can still be written).
  int64_t Read(char* into, int64_t n);
  // Writes all of `bytes`; false when the client left or took them too slowly (the
  // connection closes after the handler).
  bool Write(absl::string_view bytes);
  // Whether the client has closed or shut down its side. Never blocks.
  bool ClientHungUp() const;

 private:
  friend struct HttpServerImpl;
  HttpExchange(const HttpServerImpl* server, HttpConnection* connection);
  // Waits until the socket can be read (or written: `write`) or `deadline` passes.
  bool Await(bool write, int64_t deadline_ms) const;

  const HttpServerImpl* const server_;
  HttpConnection* const connection_;
  int64_t body_left_;
  bool continue_sent_ = false;
  bool failed_ = false;       // a write failed: nothing more is written
  bool read_failed_ = false;  // a read failed: nothing more is read
  // The progress rule: each direction's deadline; the body bytes read in the read
  // window; the response bytes written, and those the client had taken (left the send
  // queue) when the write window began.
  int64_t read_deadline_ms_ = 0, write_deadline_ms_ = 0;
  int64_t read_moved_ = 0;
  int64_t written_ = 0, window_taken_ = 0;
  bool writing_ = false;
};

// Thread-safe: port() from any thread; destroy from one, not a handler's.
class HttpServer {
 public:
  using Handler = std::function<void(HttpExchange&)>;
  // Answers a bodiless request on the loop: true with the whole response (status line,
  // headers, body) in `*response`, false to pass it to a worker. Must not block.
  using InlineHandler = std::function<bool(const RequestHead&, std::string* response)>;

  // Listens; Unavailable naming the reason when it cannot (or TLS files do not load).
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(const HttpServerOptions& options,
                                                           Handler handler,
                                                           InlineHandler inline_handler);
  // Stops accepting and closes idle connections; requests being served finish first
  // (queued ones are closed unserved), then every connection closes.
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const { return port_; }

  // Handler and InlineHandler are HttpServerImpl's to run (server_internal.h).
 private:
  explicit HttpServer(std::unique_ptr<HttpServerImpl> impl);
  std::unique_ptr<HttpServerImpl> impl_;
  int port_ = 0;
};

}  // namespace myops::server
