// MetricsEndpoint: the Prometheus scrape endpoint, `GET /metrics` over plain HTTP/1.x on its
// own port (--metrics-address), served by prometheus-cpp's Exposer (civetweb). Scrapes are
// served concurrently by a pool of threads, so a silent or slow client holds one thread
// for at most the request timeout and never delays another scrape while threads are free;
// connections beyond the pool wait in a bounded queue. Other methods get 405, other paths
// 404, malformed requests 400; no files are ever served.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "http/tls.h"
#include "pipeline/metrics.h"

namespace prometheus {
class Exposer;
}

namespace myops::server {

// Thread-safe: port() may be called from any thread; destroy it from one.
class MetricsEndpoint {
 public:
  // Worker threads (each serves one connection at a time), the connections accepted while
  // all are busy, and the time a client gets to send its request or take the response.
  static constexpr int kThreads = 16;
  static constexpr int kQueuedConnections = 16;
  static constexpr int kRequestTimeoutMs = 1000;

  // Listens on HOST:PORT (an IPv4 address or host name; port 0: any free port; empty
  // HOST: all interfaces) and serves `metrics`' series, plus the exposer's own
  // exposer_* series, until destroyed. `metrics` and whatever its gauges read must stay
  // valid until then. InvalidArgument for a malformed address; Unavailable, naming the
  // address and the reason, when it cannot be bound.
  // With `passwords`, GET /metrics needs HTTP Basic authentication with one of them (any
  // user name; compared in constant time, each): 401 with a WWW-Authenticate challenge
  // otherwise. With `tls` files, the port serves HTTPS only (http/tls.h: client
  // certificates required when tls.client_ca_file is set); Unavailable naming the file
  // that does not load.
  static absl::StatusOr<std::unique_ptr<MetricsEndpoint>> Start(
      const std::string& address, const Metrics& metrics, std::vector<std::string> passwords = {},
      const HttpTlsFiles& tls = {});
  // Stops serving and joins the threads: at once, or after at most kRequestTimeoutMs
  // when a thread is waiting for a silent client (dropped then).
  ~MetricsEndpoint();
  MetricsEndpoint(const MetricsEndpoint&) = delete;
  MetricsEndpoint& operator=(const MetricsEndpoint&) = delete;

  int port() const { return port_; }

 private:
  MetricsEndpoint() = default;

  std::unique_ptr<prometheus::Exposer> exposer_;
  int port_ = 0;
  uint32_t wake_ip_ = 0;  // IPv4 address (network order) that reaches the listener; 0: none
};

}  // namespace myops::server
