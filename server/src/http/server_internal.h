// What the REST port's HTTP server (http/server.h) shares between its two halves, private
// to http/: server.cc (the event loop, start and stop) and exchange.cc (the workers and an
// exchange's blocking I/O).
//
// Ownership: the loop thread owns every HttpConnection (the map `connections`) and is the
// only one to create, close or free them, and to keep the per-address counts. A connection
// whose head is whole is taken off the epoll set and queued; from then on one worker uses
// it, and hands it back through `returned` (an eventfd wakes the loop). A connection is
// touched by one thread at a time; the queue's mutex orders the hand-overs.
#pragma once

#include <openssl/ssl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "http/request_head.h"
#include "http/server.h"

namespace myops::server {

inline int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct HttpConnection {
  enum class State { kHandshake, kHead, kInline, kWorker, kLinger };

  int fd = -1;
  SSL* ssl = nullptr;
  std::string address;  // the client's IP address
  std::string peer;     // address:port
  State state = State::kHead;
  uint32_t events = 0;   // the epoll events it is registered for; 0: not registered
  int64_t deadline = 0;  // of the state: handshake, head (from its first byte), idle, write
  bool head_started = false;
  std::string in;         // read, not yet used: the head being read, then what followed it
  size_t scanned = 0;     // of `in`, searched for a head's end
  std::string head_text;  // the head being served; `head`'s views point into it
  RequestHead head;
  std::string out;  // an inline response being written by the loop
  size_t out_sent = 0;
  bool close_after_out = false;
  bool close = false;  // set by a worker: close when handed back
};

// Reads into `into`: the count (> 0), 0 when the client closed or the connection failed,
// -1 when it would block (`*want_write`: until the socket is writable, for TLS).
int64_t ReadSome(HttpConnection* c, char* into, size_t n, bool* want_write);

// Writes from `from`: the count (> 0), 0 when the connection failed, -1 when it would
// block (`*want_read`: until the socket is readable, for TLS).
int64_t WriteSome(HttpConnection* c, const char* from, size_t n, bool* want_read);

// Each header value of c->head ends NUL-terminated in c->head_text (the byte after a value
// is a space, tab, CR or LF).
void TerminateValues(HttpConnection* c);

struct HttpServerImpl {
  HttpServerOptions options;
  HttpServer::Handler handler;
  HttpServer::InlineHandler inline_handler;
  SSL_CTX* ssl_ctx = nullptr;
  int listen_fd = -1, epoll_fd = -1, wake_fd = -1;
  std::thread loop;
  std::vector<std::thread> workers;
  std::atomic<bool> stopping{false};

  // The loop thread's alone.
  std::unordered_map<int, std::unique_ptr<HttpConnection>> connections;
  std::unordered_map<std::string, int> per_address;
  bool accepting = true;  // false: the listening socket is off the epoll set (no fds left)
  int64_t next_scan = 0;

  absl::Mutex mu;
  absl::CondVar work;
  std::deque<HttpConnection*> queue ABSL_GUARDED_BY(mu);      // heads waiting for a worker
  std::vector<HttpConnection*> returned ABSL_GUARDED_BY(mu);  // handed back by workers
  bool workers_stop ABSL_GUARDED_BY(mu) = false;
  int idle_workers ABSL_GUARDED_BY(mu) = 0;

  ~HttpServerImpl() {
    if (listen_fd >= 0) close(listen_fd);
    if (epoll_fd >= 0) close(epoll_fd);
    if (wake_fd >= 0) close(wake_fd);
    if (ssl_ctx != nullptr) SSL_CTX_free(ssl_ctx);
  }

  // What a step of a connection's state machine left it in.
  enum class Step { kWait, kAgain, kGone };

  void Loop();
  void Accept();
  Step Advance(HttpConnection* c);
  Step Handshake(HttpConnection* c);
  Step ReadHead(HttpConnection* c);
  Step Dispatch(HttpConnection* c, size_t head_length);
  Step StartInline(HttpConnection* c, std::string response, bool close_after);
  Step Flush(HttpConnection* c);
  void Idle(HttpConnection* c);
  void Watch(HttpConnection* c, uint32_t events);
  void Close(HttpConnection* c);
  void Linger(HttpConnection* c);
  Step Drain(HttpConnection* c);
  void TakeReturned();
  void Scan(int64_t now);
  void Work();
  bool NextHeadSoon(HttpConnection* c);
  void Serve(HttpConnection* c);
  void HandBack(HttpConnection* c);
};

}  // namespace myops::server
