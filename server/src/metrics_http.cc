// The Prometheus scrape endpoint (see metrics_http.h).
#include "metrics_http.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace myops::server {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::chrono::milliseconds kIoTimeout{2000};
constexpr size_t kMaxHead = 8 << 10;

// Waits until `fd` is ready for `events`; false when `deadline` passes, `stop` becomes
// readable (the server is being destroyed) or poll fails.
bool WaitFor(int fd, short events, Clock::time_point deadline, int stop) {
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p[2] = {{fd, events, 0}, {stop, POLLIN, 0}};
    const int n = poll(p, 2, static_cast<int>(left));
    if (n > 0) return p[1].revents == 0;
    if (n < 0 && errno != EINTR) return false;
  }
}

void SendAll(int fd, const std::string& data, Clock::time_point deadline, int stop) {
  size_t sent = 0;
  while (sent < data.size() && WaitFor(fd, POLLOUT, deadline, stop)) {
    const ssize_t n = send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return;
    sent += static_cast<size_t>(n);
  }
}

std::string Response(const char* status, const std::string& body, const char* extra = "") {
  return absl::StrCat(
      "HTTP/1.1 ", status, "\r\nContent-Type: ",
      absl::string_view(status).substr(0, 3) == "200" ? "text/plain; version=0.0.4; charset=utf-8"
                                                      : "text/plain; charset=utf-8",
      "\r\nContent-Length: ", body.size(), "\r\n", extra, "Connection: close\r\n\r\n", body);
}

}  // namespace

absl::StatusOr<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::Start(
    const std::string& address, Render render) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon + 1 == address.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics address \"", address, "\" is not HOST:PORT"));
  }
  std::string host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  const std::string port = address.substr(colon + 1);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (const int rc =
          getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(), &hints, &found);
      rc != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics address \"", address, "\": ", gai_strerror(rc)));
  }
  std::unique_ptr<MetricsHttpServer> s(new MetricsHttpServer());
  s->render_ = std::move(render);
  std::string error = "no address";
  for (addrinfo* a = found; a != nullptr && s->listen_fd_ < 0; a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 16) == 0) {
      s->listen_fd_ = fd;
    } else {
      error = std::strerror(errno);
      close(fd);
    }
  }
  freeaddrinfo(found);
  if (s->listen_fd_ < 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen for metrics on ", address, ": ", error));
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof(bound);
  getsockname(s->listen_fd_, reinterpret_cast<sockaddr*>(&bound), &len);
  s->port_ = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                               : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  if (pipe2(s->wake_, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("metrics: pipe: ", std::strerror(errno)));
  }
  s->thread_ = std::thread([raw = s.get()] { raw->Run(); });
  return s;
}

MetricsHttpServer::~MetricsHttpServer() {
  if (thread_.joinable()) {
    const char stop = 1;
    (void)!write(wake_[1], &stop, 1);
    thread_.join();
  }
  for (int fd : {listen_fd_, wake_[0], wake_[1]}) {
    if (fd >= 0) close(fd);
  }
}

void MetricsHttpServer::Run() {
  for (;;) {
    pollfd p[2] = {{listen_fd_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
    if (poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (p[1].revents != 0) return;
    if ((p[0].revents & POLLIN) == 0) continue;
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) continue;
    Serve(fd);
    close(fd);
  }
}

void MetricsHttpServer::Serve(int fd) {
  const auto deadline = Clock::now() + kIoTimeout;
  std::string head;
  char buffer[1024];
  while (head.find("\r\n\r\n") == std::string::npos && head.find("\n\n") == std::string::npos) {
    if (head.size() > kMaxHead) {
      SendAll(fd, Response("431 Request Header Fields Too Large", "request head over 8 KiB\n"),
              Clock::now() + kIoTimeout, wake_[0]);
      return;
    }
    if (!WaitFor(fd, POLLIN, deadline, wake_[0])) return;  // Silent, slow, or stopping.
    const ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return;  // Closed before a full request head.
    head.append(buffer, static_cast<size_t>(n));
  }
  const absl::string_view line = absl::string_view(head).substr(0, head.find_first_of("\r\n"));
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == absl::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  std::string response;
  if (sp2 == absl::string_view::npos || line.substr(sp2 + 1).substr(0, 5) != "HTTP/") {
    response =
        Response("400 Bad Request", "expected an HTTP request line: GET /metrics HTTP/1.1\n");
  } else {
    const absl::string_view method = line.substr(0, sp1);
    absl::string_view path = line.substr(sp1 + 1, sp2 - sp1 - 1);
    path = path.substr(0, path.find('?'));
    if (method != "GET") {
      response = Response("405 Method Not Allowed", "only GET is served\n", "Allow: GET\r\n");
    } else if (path != "/metrics") {
      response = Response("404 Not Found", "the metrics are at /metrics\n");
    } else {
      response = Response("200 OK", render_());
    }
  }
  SendAll(fd, response, Clock::now() + kIoTimeout, wake_[0]);
}

}  // namespace myops::server
