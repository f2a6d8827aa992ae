// The REST port's HTTP server, its workers (http/server.h): serving whole heads, waiting
// briefly for a keep-alive client's next one, and an exchange's blocking-with-deadline
// I/O under the progress rule. The event loop is server.cc's; what both share,
// http/server_internal.h.
#include <linux/sockios.h>
#include <openssl/err.h>
#include <poll.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include "http/listener.h"
#include "http/server.h"
#include "http/server_internal.h"

namespace myops::server {
namespace {

// An SSL_read or SSL_write `r` that moved no bytes: -1 when it would block (on `same`,
// the call's own direction; on the other, `*want_other`: TLS needs that one first), 0
// when the connection failed.
int64_t SslMovedNothing(SSL* ssl, int r, int same, bool* want_other) {
  const int error = SSL_get_error(ssl, r);
  if (error == same) return -1;
  if (error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE) {
    *want_other = true;
    return -1;
  }
  return 0;
}

}  // namespace

// Reads into `into`: the count (> 0), 0 when the client closed or the connection failed,
// -1 when it would block (`*want_write`: until the socket is writable, for TLS).
int64_t ReadSome(HttpConnection* c, char* into, size_t n, bool* want_write) {
  *want_write = false;
  if (c->ssl == nullptr) {
    for (;;) {
      const ssize_t r = recv(c->fd, into, n, 0);
      if (r >= 0) return r;
      if (errno == EINTR) continue;
      return errno == EAGAIN || errno == EWOULDBLOCK ? -1 : 0;
    }
  }
  ERR_clear_error();
  const int r = SSL_read(c->ssl, into, static_cast<int>(std::min<size_t>(n, INT_MAX)));
  if (r > 0) return r;
  return SslMovedNothing(c->ssl, r, SSL_ERROR_WANT_READ, want_write);
}

// Writes from `from`: the count (> 0), 0 when the connection failed, -1 when it would
// block (`*want_read`: until the socket is readable, for TLS).
int64_t WriteSome(HttpConnection* c, const char* from, size_t n, bool* want_read) {
  *want_read = false;
  if (c->ssl == nullptr) {
    for (;;) {
      const ssize_t r = send(c->fd, from, n, MSG_NOSIGNAL);
      if (r > 0) return r;
      if (r < 0 && errno == EINTR) continue;
      return r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? -1 : 0;
    }
  }
  ERR_clear_error();
  const int r = SSL_write(c->ssl, from, static_cast<int>(std::min<size_t>(n, INT_MAX)));
  if (r > 0) return r;
  return SslMovedNothing(c->ssl, r, SSL_ERROR_WANT_WRITE, want_read);
}

void HttpServerImpl::Work() {
  pthread_setname_np(pthread_self(), "myops-http");
  for (;;) {
    HttpConnection* c = nullptr;
    bool serve = false;
    {
      absl::MutexLock lock(&mu);
      ++idle_workers;
      while (queue.empty() && !workers_stop) work.Wait(&mu);
      --idle_workers;
      if (queue.empty()) return;
      c = queue.front();
      queue.pop_front();
      serve = !workers_stop;
    }
    if (serve) {
      do {
        Serve(c);
      } while (!c->close && NextHeadSoon(c));
    } else {
      c->close = true;  // queued when the server stopped: closed unserved
    }
    HandBack(c);
  }
}

// A keep-alive client usually sends its next request right after the response: waiting
// for it here for up to kStickyMs saves the two hand-overs (worker to loop to worker) that
// would otherwise cost more than a small request itself. Only while another worker is
// idle and no head waits, and only for a head that arrives whole at once; anything else
// (part of a head, a head the loop answers itself, a malformed one) goes back to the loop.
bool HttpServerImpl::NextHeadSoon(HttpConnection* c) {
  constexpr int kStickyMs = 2;
  {
    absl::MutexLock lock(&mu);
    if (workers_stop || !queue.empty() || idle_workers == 0) return false;
  }
  if (RequestHeadLength(c->in) == 0 && c->in.size() < options.max_head_bytes) {
    if (c->ssl == nullptr || SSL_has_pending(c->ssl) == 0) {
      pollfd p{c->fd, POLLIN, 0};
      if (poll(&p, 1, kStickyMs) != 1 || (p.revents & POLLIN) == 0) return false;
    }
    char buffer[16 << 10];
    bool want_write = false;
    const int64_t n = ReadSome(
        c, buffer, std::min(sizeof(buffer), options.max_head_bytes - c->in.size()), &want_write);
    if (n <= 0) return false;  // the loop sees the close, or waits for the rest
    c->in.append(buffer, static_cast<size_t>(n));
  }
  const size_t length = RequestHeadLength(c->in);
  if (length == 0) return false;
  // Parsed in place; on a refusal `in` still holds the head, which the loop parses again.
  c->head_text.assign(c->in, 0, length);
  std::string unused;
  if (ParseRequestHead(c->head_text, &c->head) != HeadError::kNone ||
      (inline_handler && c->head.content_length <= 0 && !c->head.chunked &&
       inline_handler(c->head, &unused))) {
    return false;
  }
  c->in.erase(0, length);
  TerminateValues(c);
  return true;
}

void HttpServerImpl::Serve(HttpConnection* c) {
  HttpExchange exchange(this, c);
  handler(exchange);
  bool close = exchange.failed_ || exchange.read_failed_ || !c->head.keep_alive || c->head.chunked;
  if (!close && exchange.body_left_ > 0) {
    // A body the handler left unread: read and dropped when small and on its way (no
    // 100 Continue still owed), so the connection stays usable; else the connection closes.
    constexpr int64_t kDrainBytes = 64 << 10;
    close =
        exchange.body_left_ > kDrainBytes || (c->head.expect_continue && !exchange.continue_sent_);
    char buffer[16 << 10];
    while (!close && exchange.body_left_ > 0) {
      close = exchange.Read(buffer, sizeof(buffer)) <= 0;
    }
  }
  c->close = close;
}

HttpExchange::HttpExchange(const HttpServerImpl* server, HttpConnection* connection)
    : server_(server),
      connection_(connection),
      body_left_(connection->head.chunked ? 0
                                          : std::max<int64_t>(connection->head.content_length, 0)) {
}

const RequestHead& HttpExchange::head() const { return connection_->head; }

const char* HttpExchange::header(absl::string_view name) const {
  const HttpHeader* h = connection_->head.Find(name);
  return h == nullptr ? nullptr : h->value.data();
}

const std::string& HttpExchange::peer() const { return connection_->peer; }
const std::string& HttpExchange::address() const { return connection_->address; }

bool HttpExchange::Await(bool write, int64_t deadline_ms) const {
  for (;;) {
    const int64_t left = deadline_ms - NowMs();
    if (left <= 0) return false;
    pollfd p{connection_->fd, static_cast<int16_t>(write ? POLLOUT : POLLIN), 0};
    const int r = poll(&p, 1, static_cast<int>(std::min<int64_t>(left, INT_MAX)));
    if (r > 0) return true;
    if (r < 0 && errno != EINTR) return false;
  }
}

int64_t HttpExchange::Read(char* into, int64_t n) {
  if (read_failed_ || failed_ || body_left_ <= 0 || n <= 0) return 0;
  const HttpServerOptions& options = server_->options;
  HttpConnection* c = connection_;
  if (read_deadline_ms_ == 0) read_deadline_ms_ = NowMs() + options.stall_timeout_ms;
  if (c->head.expect_continue && !continue_sent_) {
    continue_sent_ = true;
    constexpr absl::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
    for (size_t sent = 0; sent < kContinue.size();) {
      bool want_read = false;
      const int64_t w = WriteSome(c, kContinue.data() + sent, kContinue.size() - sent, &want_read);
      if (w > 0) {
        sent += static_cast<size_t>(w);
      } else if (w == 0 || !Await(!want_read, read_deadline_ms_)) {
        failed_ = true;
        return 0;
      }
    }
  }
  n = std::min(n, body_left_);
  int64_t got = 0;
  if (!c->in.empty()) {
    got = std::min<int64_t>(n, static_cast<int64_t>(c->in.size()));
    std::memcpy(into, c->in.data(), static_cast<size_t>(got));
    c->in.erase(0, static_cast<size_t>(got));
  } else {
    for (;;) {
      bool want_write = false;
      got = ReadSome(c, into, static_cast<size_t>(n), &want_write);
      if (got > 0) break;
      if (got == 0 || !Await(want_write, read_deadline_ms_)) {
        read_failed_ = true;  // the response may still be written
        return 0;
      }
    }
  }
  body_left_ -= got;
  if ((read_moved_ += got) >= options.progress_bytes) {
    read_moved_ = 0;
    read_deadline_ms_ = NowMs() + options.stall_timeout_ms;
  }
  return got;
}

bool HttpExchange::Write(absl::string_view bytes) {
  if (failed_) return false;
  const HttpServerOptions& options = server_->options;
  if (!writing_) {
    writing_ = true;
    write_deadline_ms_ = NowMs() + options.stall_timeout_ms;
  }
  for (size_t sent = 0; sent < bytes.size();) {
    bool want_read = false;
    const int64_t w = WriteSome(connection_, bytes.data() + sent, bytes.size() - sent, &want_read);
    if (w > 0) {
      sent += static_cast<size_t>(w);
      written_ += w;
      continue;
    }
    if (w == 0) {
      failed_ = true;
      return false;
    }
    // Progress is what the client takes: the bytes that left the socket's send queue (a
    // large queue drains a long while before the socket reads as writable again).
    while (!Await(!want_read, write_deadline_ms_)) {
      int queued = 0;
      const int64_t taken =
          ioctl(connection_->fd, SIOCOUTQ, &queued) == 0 ? written_ - queued : written_;
      if (taken - window_taken_ < options.progress_bytes) {
        failed_ = true;
        return false;
      }
      window_taken_ = taken;
      write_deadline_ms_ = NowMs() + options.stall_timeout_ms;
    }
  }
  return true;
}

bool HttpExchange::ClientHungUp() const { return myops::server::ClientHungUp(connection_->fd); }

}  // namespace myops::server
