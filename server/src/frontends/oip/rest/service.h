// The Open Inference Protocol (KServe v2) HTTP/REST front end (--http-address): health,
// server and model metadata, model configuration and inference with JSON tensors and the
// binary tensor data extension, over the same pipeline as the gRPC front ends
// (Pipeline::ProcessCall: admission, memory budget, executor, metrics under the
// "HttpModelInfer" rpc label). The mapping of operators to models is frontends/oip/codec.h's,
// the request rules frontends/oip/args.h's, the bodies frontends/oip/rest/json.h's. No torch here.
//
// Server: http/server.h, the server's own HTTP/1.1 server (an event loop reads heads,
// workers serve them; its header says why: civetweb, which served this port before, gave
// a worker to every connection, so slowly sent heads stopped every request):
//  - concurrency: HttpServerOptions::workers workers, each serving one request at a time
//    and blocking while it runs (the executor's threads compute; these never touch gRPC),
//    and a bounded queue of whole heads. Health (/v2/health/live, /v2/health/ready) is
//    answered on the event loop, so probes answer while every worker is busy.
//  - robustness: the handler sees Content-Length before any body byte is read, so the
//    body is refused (413) or its memory reserved from the budget as it arrives; heads
//    are bounded in size and time (--stall-timeout-ms from the first byte); a body or a
//    response that moves less than 16 KiB per --stall-timeout-ms is cut off; connections
//    are bounded in all and per client address (--http-max-connections,
//    --http-max-connections-per-address).
//  - TLS: with gRPC's --tls-cert/--tls-key (and --tls-client-ca), the REST port serves
//    HTTPS only, with the same certificate and client-certificate rule (http/tls.h).
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
#include "http/server.h"
#include "pipeline/metrics.h"
#include "pipeline/pipeline.h"

namespace myops::server {

struct HttpOptions {
  std::string address;  // HOST:PORT; port 0: any free port
  HttpTlsFiles tls;     // gRPC's TLS files; empty: plain HTTP
  int max_connections = 1024;
  int max_connections_per_address = 64;  // 0: unbounded
};

// Thread-safe: port() and BeginDrain() from any thread; destroy from one. Borrows
// `pipeline`, which must outlive it.
class KServeHttp {
 public:
  static constexpr int kWorkers = 32;               // requests served at once
  static constexpr int kQueuedRequests = 64;        // whole heads waiting for a worker
  static constexpr int kKeepAliveTimeoutMs = 5000;  // an idle connection is closed after
  static constexpr int kMaxHeadBytes = 16384;

  // Listens on options.address; InvalidArgument for a malformed address, Unavailable
  // naming the reason when it cannot listen or the TLS files do not load.
  static absl::StatusOr<std::unique_ptr<KServeHttp>> Start(const HttpOptions& options,
                                                           Pipeline* pipeline, BearerAuth auth);
  // Stops: no new connections; requests being served finish first.
  ~KServeHttp() = default;
  KServeHttp(const KServeHttp&) = delete;
  KServeHttp& operator=(const KServeHttp&) = delete;

  int port() const { return server_->port(); }

  // From now on /v2/health/ready and model readiness answer false (the server drains).
  void BeginDrain() { draining_.store(true, std::memory_order_release); }

 private:
  KServeHttp(Pipeline* pipeline, BearerAuth auth)
      : pipeline_(pipeline),
        auth_(std::move(auth)),
        infer_rpc_(pipeline->metrics().AddRpc("HttpModelInfer")) {}
  // Health, answered on the server's event loop (HttpServer::InlineHandler).
  bool AnswerHealth(const RequestHead& head, std::string* response) const;
  void Serve(HttpExchange* conn);
  // /v2/models/{model}[/versions/{version}][/ready|/config|/stats|/infer], for the
  // caller `client` (its tenant, BearerAuth::TenantOfHeader: owner of the regions it names).
  void ServeModel(HttpExchange* conn, absl::string_view method, const std::string& path,
                  const std::string& client);
  // POST .../infer (infer.cc).
  void Infer(HttpExchange* conn, const std::string& model, const std::string& version,
             const std::string& client);
  // /v2/systemsharedmemory/... (frontends/oip/rest/shm.h): `client`'s regions.
  void ServeSharedMemory(HttpExchange* conn, const std::string& path, const std::string& client);
  // Triton's extensions answered as frontends/oip/extensions.h says (the repository
  // index and control, CUDA shared memory, trace and log settings); false when `path` is
  // none of theirs.
  bool ServeExtension(HttpExchange* conn, absl::string_view method, const std::string& path);
  bool ready() const { return !draining_.load(std::memory_order_acquire); }

  Pipeline* const pipeline_;
  const BearerAuth auth_;
  Metrics::Rpc* const infer_rpc_;  // this front end's series in the pipeline's metrics
  std::atomic<bool> draining_{false};
  std::unique_ptr<HttpServer> server_;  // last: stopped first
};

}  // namespace myops::server
