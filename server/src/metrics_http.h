// MetricsHttpServer: the Prometheus scrape endpoint, `GET /metrics` over plain HTTP/1.x
// on its own port (--metrics-address). Deliberately small: one thread serves one
// connection at a time and closes it after the response; a client gets 2 s to send its
// request head (at most 8 KiB) and 2 s to take the response, so a slow or silent client
// delays a scrape by at most that and can never stop the endpoint. Anything but
// `GET /metrics` gets a precise 400, 404 or 405.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"

namespace myops::server {

class MetricsHttpServer {
 public:
  using Render = std::function<std::string()>;  // Called on the server's thread.

  // Listens on HOST:PORT (port 0: any free port; "[::1]:0" for IPv6) and serves `render`'s
  // text at /metrics until destroyed.
  static absl::StatusOr<std::unique_ptr<MetricsHttpServer>> Start(const std::string& address,
                                                                  Render render);
  // Stops and joins the thread at once, even with a client connected (it is dropped).
  ~MetricsHttpServer();

  int port() const { return port_; }

 private:
  MetricsHttpServer() = default;
  void Run();
  void Serve(int fd);

  Render render_;
  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};  // A pipe: writing to it stops Run().
  int port_ = 0;
  std::thread thread_;
};

}  // namespace myops::server
