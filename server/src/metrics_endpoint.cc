// The Prometheus scrape endpoint: prometheus::Exposer configured for untrusted clients
// (see metrics_endpoint.h).
#include "metrics_endpoint.h"

#include <CivetServer.h>
#include <civetweb.h>
#include <dlfcn.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <exception>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "prometheus/exposer.h"

namespace myops::server {
namespace {

// civetweb reports why it cannot start (e.g. "cannot bind to 127.0.0.1:9090: 98 (Address
// already in use)") through log_message on the thread that starts it: Start collects
// those messages here. Runtime messages (other threads) go to civetweb's default, which
// without an error_log_file option is nowhere.
thread_local std::string* start_errors = nullptr;

int LogMessage(const mg_connection*, const char* message) {
  if (start_errors == nullptr) return 0;
  absl::StrAppend(start_errors, start_errors->empty() ? "" : "; ", message);
  return 1;
}

// Runs before civetweb routes a parsed request: answers anything but GET with 405 (the
// exposer's handler would leave it to civetweb, which says 404). Paths other than
// /metrics reach no handler and get civetweb's 404.
int BeginRequest(mg_connection* conn) {
  const mg_request_info* request = mg_get_request_info(conn);
  if (std::strcmp(request->request_method, "GET") == 0) return 0;  // Routed as usual.
  static constexpr char kBody[] = "only GET is served\n";
  mg_response_header_start(conn, 405);
  mg_response_header_add(conn, "Allow", "GET", -1);
  mg_response_header_add(conn, "Content-Type", "text/plain; charset=utf-8", -1);
  mg_response_header_add(conn, "Content-Length", std::to_string(sizeof(kBody) - 1).c_str(), -1);
  mg_response_header_send(conn);
  mg_write(conn, kBody, sizeof(kBody) - 1);
  return 405;  // Handled; civetweb closes the connection (no keep-alive).
}

struct Listen {
  std::string host;  // IPv4 address or host name, never empty
  uint32_t port = 0;
};

// HOST:PORT, checked, with an empty HOST meaning all interfaces.
absl::StatusOr<Listen> ParseAddress(const std::string& address) {
  const auto invalid = [&address](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("metrics address \"", address, "\" ", why));
  };
  const size_t colon = address.rfind(':');
  uint32_t port = 0;
  if (colon == std::string::npos ||
      !std::all_of(address.begin() + colon + 1, address.end(), absl::ascii_isdigit) ||
      !absl::SimpleAtoi(address.substr(colon + 1), &port) || port > 65535) {
    return invalid("is not HOST:PORT (PORT a number, 0 for any free port)");
  }
  std::string host = address.substr(0, colon);
  if (absl::StartsWith(host, "[") && !mg_check_feature(8)) {
    return invalid("is IPv6, which this build's civetweb library does not serve; use IPv4");
  }
  // A comma separates civetweb's listening ports: never let one address become two.
  if (host.find_first_of(", \t") != std::string::npos) return invalid("has an invalid host");
  return Listen{host.empty() ? "0.0.0.0" : host, port};
}

// The IPv4 address (network order) a local client connects to for a listener on `host`;
// 0 when it does not resolve.
uint32_t LocalAddressOf(const std::string& host) {
  if (host == "0.0.0.0") return htonl(INADDR_LOOPBACK);
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0 || found == nullptr) return 0;
  const uint32_t ip = reinterpret_cast<const sockaddr_in*>(found->ai_addr)->sin_addr.s_addr;
  freeaddrinfo(found);
  return ip;
}

// Opens and closes one connection to ip:port without ever blocking for long.
void Knock(uint32_t ip, int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = ip;
  if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0 &&
      errno == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    (void)poll(&p, 1, 50);
  }
  close(fd);
}

}  // namespace

absl::StatusOr<std::unique_ptr<MetricsEndpoint>> MetricsEndpoint::Start(const std::string& address,
                                                                        const Metrics& metrics) {
  auto listen = ParseAddress(address);
  if (!listen.ok()) return listen.status();
  // No document_root: civetweb serves no files. No keep-alive: one request per connection.
  std::vector<std::string> options = {
      "listening_ports",    absl::StrCat(listen->host, ":", listen->port),
      "num_threads",        std::to_string(kThreads),
      "connection_queue",   std::to_string(kQueuedConnections),
      "listen_backlog",     std::to_string(kQueuedConnections),
      "request_timeout_ms", std::to_string(kRequestTimeoutMs),
      "enable_keep_alive",  "no",
      "max_request_size",   "8192",
  };
  CivetCallbacks callbacks;  // Copied by the server.
  callbacks.log_message = LogMessage;
  callbacks.begin_request = BeginRequest;
  std::unique_ptr<MetricsEndpoint> endpoint(new MetricsEndpoint());
  std::string errors;
  start_errors = &errors;
  try {
    endpoint->exposer_ = std::make_unique<prometheus::Exposer>(std::move(options), &callbacks);
  } catch (const std::exception& e) {  // CivetException: civetweb did not start.
    start_errors = nullptr;
    return absl::UnavailableError(absl::StrCat("cannot listen for metrics on ", address, ": ",
                                               errors.empty() ? e.what() : errors));
  }
  start_errors = nullptr;
  const std::vector<int> ports = endpoint->exposer_->GetListeningPorts();
  if (ports.size() != 1 || ports[0] <= 0) {
    return absl::InternalError(absl::StrCat("metrics on ", address, ": no port was bound"));
  }
  endpoint->port_ = ports[0];
  endpoint->wake_ip_ = LocalAddressOf(listen->host);
  for (const auto& collectable : metrics.Collectables()) {
    endpoint->exposer_->RegisterCollectable(collectable);
  }
  return endpoint;
}

MetricsEndpoint::~MetricsEndpoint() {
  // civetweb's listening thread sees the stop only when its poll returns, which it does
  // every 2 s or at a new connection: knock until the server has stopped.
  std::atomic<bool> stopped{false};
  std::thread knocker([this, &stopped] {
    while (wake_ip_ != 0 && !stopped.load()) {
      Knock(wake_ip_, port_);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
  exposer_.reset();
  stopped = true;
  knocker.join();
}

}  // namespace myops::server

// Debian's civetweb creates its threads with a fixed 100 KiB stack, and glibc carves a
// thread's static TLS out of its stack: the CUDA libraries torch links bring the static
// TLS past 100 KiB (libcublasLt alone has 92 KiB), so pthread_create fails with EINVAL
// and civetweb cannot start ("Cannot create threads"). This definition, in the
// executable, takes precedence over libc's for every library: it raises any requested
// stack below 1 MiB to 1 MiB (address space only; pages are touched as used) and is
// otherwise libc's. The linker exports it (server/CMakeLists.txt).
extern "C" int pthread_attr_setstacksize(pthread_attr_t* attr, size_t size) {
  using SetStackSize = int (*)(pthread_attr_t*, size_t);
  static const auto libc = reinterpret_cast<SetStackSize>(
      dlsym(RTLD_NEXT, "pthread_attr_setstacksize"));  // NOLINT: the next definition, libc's.
  constexpr size_t kMinStack = size_t{1} << 20;
  return libc(attr, size < kMinStack ? kMinStack : size);
}
