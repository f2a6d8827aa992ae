// The Prometheus scrape endpoint: prometheus::Exposer configured for untrusted clients
// (see http/metrics_endpoint.h).
#include "http/metrics_endpoint.h"

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
#include "http/listener.h"
#include "prometheus/exposer.h"
#include "util/secret.h"

namespace myops::server {
namespace {

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

// The TLS files of the endpoint being started on this thread, and where their error
// goes: civetweb calls init_ssl from mg_start, inside the exposer's constructor, with
// the CivetServer as its user data, which has no room for ours.
thread_local const HttpTlsFiles* starting_tls = nullptr;
thread_local std::string* starting_tls_error = nullptr;

int InitSsl(void* ssl_ctx, void* /*civet_server*/) {
  // 1: the context is set up here (civetweb loads no certificate itself); -1: refuse.
  if (starting_tls == nullptr) return -1;
  return ConfigureHttpTls(ssl_ctx, *starting_tls, starting_tls_error) ? 1 : -1;
}

}  // namespace

absl::StatusOr<std::unique_ptr<MetricsEndpoint>> MetricsEndpoint::Start(
    const std::string& address, const Metrics& metrics, std::vector<std::string> passwords,
    const HttpTlsFiles& tls) {
  const bool https = !tls.cert_file.empty();
  auto listen = ParseListenAddress(address, "metrics address");
  if (!listen.ok()) return listen.status();
  // No document_root: civetweb serves no files. No keep-alive: one request per connection.
  std::vector<std::string> options = {
      "listening_ports",    absl::StrCat(listen->host, ":", listen->port, https ? "s" : ""),
      "num_threads",        std::to_string(kThreads),
      "connection_queue",   std::to_string(kQueuedConnections),
      "listen_backlog",     std::to_string(kQueuedConnections),
      "request_timeout_ms", std::to_string(kRequestTimeoutMs),
      "enable_keep_alive",  "no",
      "max_request_size",   "8192",
  };
  CivetCallbacks callbacks;  // Copied by the server.
  callbacks.log_message = LogStartMessage;
  callbacks.begin_request = BeginRequest;
  std::string tls_error;
  if (https) {
    callbacks.init_ssl = InitSsl;
    mg_init_library(MG_FEATURES_TLS);
  }
  std::unique_ptr<MetricsEndpoint> endpoint(new MetricsEndpoint());
  std::string errors;
  std::string failure;
  starting_tls = https ? &tls : nullptr;
  starting_tls_error = &tls_error;
  CollectStartErrors(&errors, [&] {
    try {
      endpoint->exposer_ = std::make_unique<prometheus::Exposer>(std::move(options), &callbacks);
    } catch (const std::exception& e) {  // CivetException: civetweb did not start.
      failure = e.what();
    }
  });
  starting_tls = nullptr;
  starting_tls_error = nullptr;
  if (!endpoint->exposer_) {
    return absl::UnavailableError(absl::StrCat("cannot listen for metrics on ", address, ": ",
                                               !tls_error.empty() ? tls_error
                                               : errors.empty()   ? failure
                                                                  : errors));
  }
  const std::vector<int> ports = endpoint->exposer_->GetListeningPorts();
  if (ports.size() != 1 || ports[0] <= 0) {
    return absl::InternalError(absl::StrCat("metrics on ", address, ": no port was bound"));
  }
  endpoint->port_ = ports[0];
  endpoint->wake_ip_ = LocalAddressOf(listen->host);
  for (const auto& collectable : metrics.Collectables()) {
    endpoint->exposer_->RegisterCollectable(collectable);
  }
  if (!passwords.empty()) {
    endpoint->exposer_->RegisterAuth(
        [passwords = std::move(passwords)](const std::string& /*user*/, const std::string& given) {
          bool accepted = false;
          for (const std::string& password : passwords) {  // every one: the time tells none
            accepted |= ConstantTimeEquals(given, password);
          }
          return accepted;
        },
        "myops metrics", "/metrics");
  }
  return endpoint;
}

MetricsEndpoint::~MetricsEndpoint() {
  StopListener([this] { exposer_.reset(); }, wake_ip_, port_);
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
