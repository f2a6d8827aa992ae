// The REST port's HTTP/1.1 server (http/server.h): the event loop (accepting, TLS
// handshakes, request heads, inline answers, lingering closes, deadlines), start and stop.
// The workers and an exchange's I/O are exchange.cc's; what both share, and who owns a
// connection when, http/server_internal.h.
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "http/server.h"
#include "http/server_internal.h"

namespace myops::server {
namespace {

// {"error": what} as a whole response that closes the connection. `what` is ours (no
// client bytes): nothing in it needs JSON escaping but quotes, which it never holds.
std::string ErrorResponse(int status, absl::string_view reason, absl::string_view what) {
  const std::string body = absl::StrCat("{\"error\":\"", what, "\"}");
  return absl::StrCat("HTTP/1.1 ", status, " ", reason,
                      "\r\nContent-Type: application/json\r\nConnection: close\r\n"
                      "Content-Length: ",
                      body.size(), "\r\n\r\n", body);
}

absl::string_view ReasonOf(int status) {
  switch (status) {
    case 400:
      return "Bad Request";
    case 408:
      return "Request Timeout";
    case 431:
      return "Request Header Fields Too Large";
    case 503:
      return "Service Unavailable";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Error";
  }
}

}  // namespace

void HttpServerImpl::Watch(HttpConnection* c, uint32_t events) {
  if (c->events == events) return;
  epoll_event e{};
  e.events = events;
  e.data.fd = c->fd;
  if (events == 0) {
    epoll_ctl(epoll_fd, EPOLL_CTL_DEL, c->fd, &e);
  } else {
    epoll_ctl(epoll_fd, c->events == 0 ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, c->fd, &e);
  }
  c->events = events;
}

void HttpServerImpl::Close(HttpConnection* c) {
  if (c->ssl != nullptr) SSL_free(c->ssl);
  close(c->fd);  // also takes it off the epoll set
  if (auto it = per_address.find(c->address); it != per_address.end() && --it->second <= 0) {
    per_address.erase(it);
  }
  connections.erase(c->fd);  // frees c
}

// A close after a response while the client may still be sending (a refused body, a head
// too large): closing with unread bytes would reset the connection, and the client could
// lose the response. So the sending side is shut, and what still comes is read and
// dropped for a while (at most kLingerMs, kLingerBytes) before the close.
void HttpServerImpl::Linger(HttpConnection* c) {
  constexpr int64_t kLingerMs = 2000;
  if (c->ssl != nullptr) SSL_shutdown(c->ssl);  // close_notify, once (non-blocking)
  shutdown(c->fd, SHUT_WR);
  c->state = HttpConnection::State::kLinger;
  c->in.clear();
  c->out_sent = 0;  // counts the bytes dropped
  c->deadline = NowMs() + std::min(kLingerMs, options.stall_timeout_ms);
  Watch(c, EPOLLIN);
}

HttpServerImpl::Step HttpServerImpl::Drain(HttpConnection* c) {
  constexpr size_t kLingerBytes = 1 << 20;
  char buffer[16 << 10];
  for (;;) {
    const ssize_t n = recv(c->fd, buffer, sizeof(buffer), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return Step::kWait;
    if (n <= 0 || (c->out_sent += static_cast<size_t>(n)) > kLingerBytes) {
      Close(c);
      return Step::kGone;
    }
  }
}

void HttpServerImpl::Accept() {
  for (;;) {
    sockaddr_storage sa{};
    socklen_t size = sizeof(sa);
    const int fd =
        accept4(listen_fd, reinterpret_cast<sockaddr*>(&sa), &size, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        // No descriptor for it: stop accepting until the next scan rather than spin.
        epoll_ctl(epoll_fd, EPOLL_CTL_DEL, listen_fd, nullptr);
        accepting = false;
      }
      return;
    }
    char text[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (sa.ss_family == AF_INET) {
      const auto& in4 = reinterpret_cast<const sockaddr_in&>(sa);
      inet_ntop(AF_INET, &in4.sin_addr, text, sizeof(text));
      port = ntohs(in4.sin_port);
    } else if (sa.ss_family == AF_INET6) {
      const auto& in6 = reinterpret_cast<const sockaddr_in6&>(sa);
      inet_ntop(AF_INET6, &in6.sin6_addr, text, sizeof(text));
      port = ntohs(in6.sin6_port);
    }
    const auto same_address = per_address.find(text);
    const int from_address = same_address == per_address.end() ? 0 : same_address->second;
    if (static_cast<int64_t>(connections.size()) >= options.max_connections ||
        (options.max_connections_per_address > 0 &&
         from_address >= options.max_connections_per_address)) {
      if (ssl_ctx == nullptr) {
        const std::string busy = ErrorResponse(
            503, ReasonOf(503),
            from_address >= options.max_connections_per_address &&
                    options.max_connections_per_address > 0
                ? "too many connections from this address (--http-max-connections-per-address)"
                : "too many connections (--http-max-connections)");
        [[maybe_unused]] ssize_t sent = send(fd, busy.data(), busy.size(), MSG_NOSIGNAL);
      }
      close(fd);
      continue;
    }
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    auto owned = std::make_unique<HttpConnection>();
    HttpConnection* c = owned.get();
    c->fd = fd;
    c->address = text;
    c->peer = absl::StrCat(text, ":", port);
    if (ssl_ctx != nullptr) {
      c->ssl = SSL_new(ssl_ctx);
      if (c->ssl == nullptr) {
        close(fd);
        continue;
      }
      SSL_set_fd(c->ssl, fd);
      SSL_set_accept_state(c->ssl);
      c->state = HttpConnection::State::kHandshake;
      c->deadline = NowMs() + options.stall_timeout_ms;
    } else {
      c->state = HttpConnection::State::kHead;
      c->deadline = NowMs() + options.keep_alive_timeout_ms;
    }
    ++per_address[c->address];
    connections.emplace(fd, std::move(owned));
    Watch(c, EPOLLIN);
  }
}

HttpServerImpl::Step HttpServerImpl::Advance(HttpConnection* c) {
  for (;;) {
    Step step = Step::kWait;
    switch (c->state) {
      case HttpConnection::State::kHandshake:
        step = Handshake(c);
        break;
      case HttpConnection::State::kHead:
        step = ReadHead(c);
        break;
      case HttpConnection::State::kInline:
        step = Flush(c);
        break;
      case HttpConnection::State::kLinger:
        step = Drain(c);
        break;
      case HttpConnection::State::kWorker:
        return Step::kWait;
    }
    if (step != Step::kAgain) return step;
  }
}

HttpServerImpl::Step HttpServerImpl::Handshake(HttpConnection* c) {
  ERR_clear_error();
  const int r = SSL_do_handshake(c->ssl);
  if (r == 1) {
    Idle(c);
    return Step::kAgain;
  }
  switch (SSL_get_error(c->ssl, r)) {
    case SSL_ERROR_WANT_READ:
      Watch(c, EPOLLIN);
      return Step::kWait;
    case SSL_ERROR_WANT_WRITE:
      Watch(c, EPOLLOUT);
      return Step::kWait;
    default:
      Close(c);
      return Step::kGone;
  }
}

// Between requests: waiting for a head, whose deadline starts with its first byte.
void HttpServerImpl::Idle(HttpConnection* c) {
  c->state = HttpConnection::State::kHead;
  c->scanned = 0;
  c->head_started = !c->in.empty();
  c->deadline =
      NowMs() + (c->head_started ? options.stall_timeout_ms : options.keep_alive_timeout_ms);
  Watch(c, EPOLLIN);
}

HttpServerImpl::Step HttpServerImpl::ReadHead(HttpConnection* c) {
  char buffer[16 << 10];
  for (;;) {
    if (const size_t length = RequestHeadLength(c->in, c->scanned)) return Dispatch(c, length);
    c->scanned = c->in.size();
    if (c->in.size() >= options.max_head_bytes) {
      return StartInline(c,
                         ErrorResponse(431, ReasonOf(431),
                                       absl::StrCat("the request head is larger than ",
                                                    options.max_head_bytes, " bytes")),
                         true);
    }
    bool want_write = false;
    const int64_t n = ReadSome(
        c, buffer, std::min(sizeof(buffer), options.max_head_bytes - c->in.size()), &want_write);
    if (n == 0) {
      Close(c);
      return Step::kGone;
    }
    if (n < 0) {
      Watch(c, want_write ? EPOLLOUT : EPOLLIN);
      return Step::kWait;
    }
    if (!c->head_started) {
      c->head_started = true;
      c->deadline = NowMs() + options.stall_timeout_ms;
    }
    c->in.append(buffer, static_cast<size_t>(n));
  }
}

void TerminateValues(HttpConnection* c) {
  for (const HttpHeader& h : c->head.headers) {
    c->head_text[static_cast<size_t>(h.value.data() - c->head_text.data()) + h.value.size()] = '\0';
  }
}

HttpServerImpl::Step HttpServerImpl::Dispatch(HttpConnection* c, size_t head_length) {
  c->head_text.assign(c->in, 0, head_length);
  c->in.erase(0, head_length);
  const char* why = "";
  const HeadError error = ParseRequestHead(c->head_text, &c->head, &why);
  if (error != HeadError::kNone) {
    const int status = HttpStatusOfHeadError(error);
    return StartInline(c, ErrorResponse(status, ReasonOf(status), why), true);
  }
  TerminateValues(c);
  std::string response;
  if (inline_handler && c->head.content_length <= 0 && !c->head.chunked &&
      inline_handler(c->head, &response)) {
    return StartInline(c, std::move(response), !c->head.keep_alive);
  }
  {
    absl::MutexLock lock(&mu);
    if (static_cast<int64_t>(queue.size()) < options.queued_requests) {
      Watch(c, 0);
      c->state = HttpConnection::State::kWorker;
      queue.push_back(c);
      work.Signal();
      return Step::kWait;
    }
  }
  return StartInline(
      c, ErrorResponse(503, ReasonOf(503), "every worker is busy and the queue is full"), true);
}

HttpServerImpl::Step HttpServerImpl::StartInline(HttpConnection* c, std::string response,
                                                 bool close_after) {
  c->state = HttpConnection::State::kInline;
  c->out = std::move(response);
  c->out_sent = 0;
  c->close_after_out = close_after;
  c->deadline = NowMs() + options.stall_timeout_ms;
  return Step::kAgain;
}

HttpServerImpl::Step HttpServerImpl::Flush(HttpConnection* c) {
  while (c->out_sent < c->out.size()) {
    bool want_read = false;
    const int64_t n =
        WriteSome(c, c->out.data() + c->out_sent, c->out.size() - c->out_sent, &want_read);
    if (n == 0) {
      Close(c);
      return Step::kGone;
    }
    if (n < 0) {
      Watch(c, want_read ? EPOLLIN : EPOLLOUT);
      return Step::kWait;
    }
    c->out_sent += static_cast<size_t>(n);
  }
  c->out.clear();
  if (c->close_after_out) {
    Linger(c);
    return Step::kAgain;
  }
  Idle(c);
  return Step::kAgain;
}

void HttpServerImpl::HandBack(HttpConnection* c) {
  {
    absl::MutexLock lock(&mu);
    returned.push_back(c);
  }
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t written = write(wake_fd, &one, sizeof(one));
}

void HttpServerImpl::TakeReturned() {
  uint64_t count = 0;
  [[maybe_unused]] ssize_t got = read(wake_fd, &count, sizeof(count));
  std::vector<HttpConnection*> back;
  {
    absl::MutexLock lock(&mu);
    back.swap(returned);
  }
  for (HttpConnection* c : back) {
    if (stopping.load(std::memory_order_acquire)) {
      Close(c);
      continue;
    }
    if (c->close) {
      Linger(c);
      Advance(c);
      continue;
    }
    Idle(c);
    Advance(c);  // a pipelined head may be whole already; TLS may hold decrypted bytes
  }
}

void HttpServerImpl::Scan(int64_t now) {
  if (!accepting && !stopping.load(std::memory_order_acquire)) {
    epoll_event e{};
    e.events = EPOLLIN;
    e.data.fd = listen_fd;
    accepting = epoll_ctl(epoll_fd, EPOLL_CTL_ADD, listen_fd, &e) == 0;
  }
  std::vector<HttpConnection*> late;
  for (auto& [fd, c] : connections) {
    if (c->state != HttpConnection::State::kWorker && now >= c->deadline) late.push_back(c.get());
  }
  for (HttpConnection* c : late) {
    if (c->state == HttpConnection::State::kHead && c->head_started && c->ssl == nullptr) {
      const std::string timeout = ErrorResponse(
          408, ReasonOf(408), "the request head did not arrive in time (--stall-timeout-ms)");
      [[maybe_unused]] ssize_t sent =
          send(c->fd, timeout.data(), timeout.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    }
    Close(c);
  }
}

void HttpServerImpl::Loop() {
  pthread_setname_np(pthread_self(), "myops-http-loop");
  epoll_event events[64];
  bool stopped = false;
  for (;;) {
    const int n = epoll_wait(epoll_fd, events, 64, 100);
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      if (fd == listen_fd) {
        if (accepting) Accept();
      } else if (fd == wake_fd) {
        TakeReturned();
      } else if (auto it = connections.find(fd); it != connections.end()) {
        Advance(it->second.get());
      }
    }
    const int64_t now = NowMs();
    if (!stopped && stopping.load(std::memory_order_acquire)) {
      stopped = true;
      epoll_ctl(epoll_fd, EPOLL_CTL_DEL, listen_fd, nullptr);
      close(listen_fd);
      listen_fd = -1;
      accepting = true;  // nothing to re-add
      std::vector<HttpConnection*> idle;
      for (auto& [fd, c] : connections) {
        if (c->state != HttpConnection::State::kWorker) idle.push_back(c.get());
      }
      for (HttpConnection* c : idle) Close(c);
      absl::MutexLock lock(&mu);
      workers_stop = true;
      work.SignalAll();
    }
    if (stopped && connections.empty()) return;
    if (now >= next_scan) {
      next_scan = now + 100;
      Scan(now);
    }
  }
}

HttpServer::HttpServer(std::unique_ptr<HttpServerImpl> impl) : impl_(std::move(impl)) {}

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(const HttpServerOptions& options,
                                                              Handler handler,
                                                              InlineHandler inline_handler) {
  auto impl = std::make_unique<HttpServerImpl>();
  impl->options = options;
  impl->handler = std::move(handler);
  impl->inline_handler = std::move(inline_handler);
  const std::string where = absl::StrCat(options.listen.host, ":", options.listen.port);
  if (!options.tls.cert_file.empty()) {
    // OpenSSL writes to the socket with write(2): a client gone must not kill the process.
    std::signal(SIGPIPE, SIG_IGN);
    impl->ssl_ctx = SSL_CTX_new(TLS_server_method());
    std::string error;
    if (impl->ssl_ctx == nullptr || !ConfigureHttpTls(impl->ssl_ctx, options.tls, &error)) {
      return absl::UnavailableError(absl::StrCat("cannot serve HTTPS on ", where, ": ", error));
    }
    SSL_CTX_set_mode(impl->ssl_ctx,
                     SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string port_text = std::to_string(options.listen.port);
  if (const int e = getaddrinfo(options.listen.host.empty() ? nullptr : options.listen.host.c_str(),
                                port_text.c_str(), &hints, &found);
      e != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot serve HTTP on ", where, ": ", gai_strerror(e)));
  }
  std::string error = "no address";
  for (addrinfo* a = found; a != nullptr && impl->listen_fd < 0; a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 1024) == 0) {
      impl->listen_fd = fd;
    } else {
      error = std::strerror(errno);
      close(fd);
    }
  }
  freeaddrinfo(found);
  if (impl->listen_fd < 0) {
    return absl::UnavailableError(absl::StrCat("cannot serve HTTP on ", where, ": ", error));
  }
  sockaddr_storage bound{};
  socklen_t size = sizeof(bound);
  getsockname(impl->listen_fd, reinterpret_cast<sockaddr*>(&bound), &size);
  const int port =
      ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<const sockaddr_in6&>(bound).sin6_port
                                        : reinterpret_cast<const sockaddr_in&>(bound).sin_port);
  impl->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  impl->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (impl->epoll_fd < 0 || impl->wake_fd < 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot serve HTTP on ", where, ": ", std::strerror(errno)));
  }
  for (int fd : {impl->listen_fd, impl->wake_fd}) {
    epoll_event e{};
    e.events = EPOLLIN;
    e.data.fd = fd;
    epoll_ctl(impl->epoll_fd, EPOLL_CTL_ADD, fd, &e);
  }
  std::unique_ptr<HttpServer> server(new HttpServer(std::move(impl)));
  server->port_ = port;
  HttpServerImpl* started = server->impl_.get();
  started->loop = std::thread([started] { started->Loop(); });
  for (int i = 0; i < options.workers; ++i) {
    started->workers.emplace_back([started] { started->Work(); });
  }
  return server;
}

HttpServer::~HttpServer() {
  impl_->stopping.store(true, std::memory_order_release);
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t written = write(impl_->wake_fd, &one, sizeof(one));
  impl_->loop.join();
  for (std::thread& t : impl_->workers) t.join();
}

}  // namespace myops::server
