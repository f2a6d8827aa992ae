// The Open Inference Protocol (KServe v2) HTTP/REST front end (--http-address): health,
// server and model metadata, model configuration and inference with JSON tensors and the
// binary tensor data extension, over the same pipeline as the gRPC front ends
// (Pipeline::ProcessCall: admission, memory budget, executor, metrics under the
// "HttpModelInfer" rpc label). The mapping of operators to models is frontends/oip/codec.h's,
// the request rules frontends/oip/args.h's, the bodies frontends/oip/rest/json.h's. No torch here.
//
// Library: civetweb (Debian libcivetweb-dev 1.15, already linked for /metrics through
// prometheus-cpp), chosen over cpp-httplib 0.11.4, Boost.Beast 1.74 and libevhtp 1.2.18:
//  - concurrency: a fixed pool of kThreads workers, each serving one connection at a time
//    and blocking while its request runs (the executor's threads compute; civetweb's never
//    touch gRPC), plus a bounded queue of accepted connections. cpp-httplib 0.11's task
//    queue is unbounded (max_queued_requests came in 0.15), though Debian's build does
//    serve TLS (the one thing it would bring, see TLS below); Beast is asynchronous but
//    leaves connection limits, timeouts, parsing limits and TLS plumbing to us (several
//    hundred lines); libevhtp's Debian release is from 2018 and upstream is inactive
//    (Triton ships its own fork).
//  - robustness: the handler sees Content-Length before any body byte is read, so the
//    body is refused (413) or its memory reserved from the budget before it is read;
//    headers are bounded (max_request_size); request_timeout_ms cuts off slow senders and
//    readers, keep_alive_timeout_ms idle connections.
//  - TLS: with gRPC's --tls-cert/--tls-key (and --tls-client-ca), the REST port serves
//    HTTPS only, with the same certificate and client-certificate rule (http/tls.h).
//    Debian 12's civetweb 1.15 loads OpenSSL at run time as "libssl.so" by OpenSSL 1.1
//    names, one of which (SSL_get_peer_certificate) libssl.so.3 no longer exports: the
//    server links two shims with those sonames (src/http/civetweb_tls) that civetweb's dlopen
//    finds, without which it crashed on the first handshake.
//  - small-request throughput (100-byte POST echo, keep-alive, loopback, 2 shared cores):
//    civetweb writing each response in one mg_write 31.6k req/s on 1 connection and 72k
//    on 8; cpp-httplib 22k and 28k. (civetweb's header API, which writes headers and body
//    separately, measured 8.4k and 25k: responses here are one write.)
// JSON: nlohmann-json 3.11 (Debian nlohmann-json3-dev): exceptions with positions for
// malformed input, exact integer/unsigned/float distinction for datatype checks.
//
// HTTP status of an absl status (errors carry {"error": "<message>"}, the message the
// gRPC front end gives): OK 200; INVALID_ARGUMENT, FAILED_PRECONDITION, OUT_OF_RANGE 400;
// UNAUTHENTICATED 401; PERMISSION_DENIED 403; NOT_FOUND 404; ALREADY_EXISTS, ABORTED 409;
// RESOURCE_EXHAUSTED 429 (413 for a body over --max-message-bytes); CANCELLED 499;
// UNIMPLEMENTED 501; UNAVAILABLE 503; DEADLINE_EXCEEDED 504; others 500. Also: 405 for a
// wrong method, 411 for a body without Content-Length (chunked), and health/readiness
// false as 400 (the protocol's "4xx is false").
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "frontends/auth.h"
#include "http/tls.h"
#include "pipeline/metrics.h"
#include "pipeline/pipeline.h"

struct mg_connection;
struct mg_context;

namespace myops::server {

struct HttpOptions {
  std::string address;  // HOST:PORT; port 0: any free port
  HttpTlsFiles tls;     // gRPC's TLS files; empty: plain HTTP
};

// Thread-safe: port() and BeginDrain() from any thread; destroy from one. Borrows
// `pipeline`, which must outlive it.
class KServeHttp {
 public:
  static constexpr int kThreads = 32;               // connections served at once
  static constexpr int kQueuedConnections = 64;     // accepted, waiting for a thread
  static constexpr int kKeepAliveTimeoutMs = 5000;  // an idle connection is closed after
  static constexpr int kMaxHeaderBytes = 16384;

  // Listens on options.address; InvalidArgument for a malformed address, Unimplemented
  // with TLS files, Unavailable naming the reason when it cannot listen.
  static absl::StatusOr<std::unique_ptr<KServeHttp>> Start(const HttpOptions& options,
                                                           Pipeline* pipeline, BearerAuth auth);
  // Stops: no new connections; requests being served finish first.
  ~KServeHttp();
  KServeHttp(const KServeHttp&) = delete;
  KServeHttp& operator=(const KServeHttp&) = delete;

  int port() const { return port_; }

  // From now on /v2/health/ready and model readiness answer false (the server drains).
  void BeginDrain() { draining_.store(true, std::memory_order_release); }

 private:
  KServeHttp(Pipeline* pipeline, BearerAuth auth)
      : pipeline_(pipeline),
        auth_(std::move(auth)),
        infer_rpc_(pipeline->metrics().AddRpc("HttpModelInfer")) {}
  static int BeginRequest(mg_connection* conn);   // civetweb's callback: every request
  static int InitSsl(void* ssl_ctx, void* self);  // civetweb's callback: TLS set-up
  void Serve(mg_connection* conn);
  // /v2/models/{model}[/versions/{version}][/ready|/config|/stats|/infer], for the
  // caller `client` (its tenant, BearerAuth::TenantOfHeader: owner of the regions it names).
  void ServeModel(mg_connection* conn, absl::string_view method, const std::string& path,
                  const std::string& client);
  // POST .../infer (infer.cc).
  void Infer(mg_connection* conn, const std::string& model, const std::string& version,
             const std::string& client);
  // /v2/systemsharedmemory/... (frontends/oip/rest/shm.h): `client`'s regions.
  void ServeSharedMemory(mg_connection* conn, const std::string& path, const std::string& client);
  // Triton's extensions answered as frontends/oip/extensions.h says (the repository
  // index and control, CUDA shared memory, trace and log settings); false when `path` is
  // none of theirs.
  bool ServeExtension(mg_connection* conn, absl::string_view method, const std::string& path);
  bool ready() const { return !draining_.load(std::memory_order_acquire); }

  Pipeline* const pipeline_;
  const BearerAuth auth_;
  Metrics::Rpc* const infer_rpc_;  // this front end's series in the pipeline's metrics
  std::atomic<bool> draining_{false};
  HttpTlsFiles tls_;
  std::string tls_error_;  // what InitSsl failed on, for Start's message
  mg_context* context_ = nullptr;
  int port_ = 0;
  uint32_t wake_ip_ = 0;
};

}  // namespace myops::server
