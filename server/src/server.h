// The composition root: assembles and runs a myops server from its layers (the executor,
// the shared memory registry, the pipeline, the front ends: myops.v1 and the Open
// Inference Protocol over gRPC, its HTTP/REST binding, the metrics endpoint), with the
// standard health service, server reflection, message limits, optional TLS and bearer
// token, and graceful shutdown. Used by main.cc and by in-process tests.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "frontends/myops_v1/service.h"
#include "frontends/oip/grpc/service.h"
#include "frontends/oip/rest/service.h"
#include "http/metrics_endpoint.h"
#include "pipeline/pipeline.h"
#include "runtime/executor.h"

namespace grpc {
class Server;
}

namespace myops::server {

struct TlsOptions {
  std::string cert_file;       // PEM server certificate chain; empty: plaintext
  std::string key_file;        // PEM private key
  std::string client_ca_file;  // PEM CA; when set, clients must present a certificate it signed
};

struct ServerOptions {
  std::string address = "0.0.0.0:50051";  // port 0 picks a free port (see Server::port)
  ServiceLimits limits;
  ExecutorOptions executor;
  TlsOptions tls;
  bool reflection = true;
  // Threads that run gRPC's callbacks, process-wide (myops/common/callback_threads.h):
  // 0 picks one per four hardware threads. Takes effect when the first server starts.
  int grpc_threads = 0;
  std::string metrics_address;  // Prometheus GET /metrics on HOST:PORT; "" disables.
  // Scrapes need HTTP Basic auth with an --auth-token-file token as the password.
  bool metrics_auth = false;
  // /metrics over HTTPS only, with the gRPC port's TLS files (tls: needs tls.cert_file).
  bool metrics_tls = false;
  // The Open Inference Protocol's HTTP/REST front end on HOST:PORT (frontends/oip/rest/service.h),
  // with the same TLS files and bearer token as gRPC; "" disables.
  std::string http_address;
  // Connections of the HTTP/REST port open at once, in all and from one client address
  // (0: unbounded); one more is answered 503 and closed.
  int http_max_connections = 1024;
  int http_max_connections_per_address = 64;
  // A second listener, always plaintext, serving only grpc.health.v1 (with the main
  // server's statuses): for probes that cannot speak TLS when `tls` is on. "" disables.
  std::string health_address;
  // When set, every myops.v1.Myops call must carry "authorization: Bearer <token>" with
  // the token in this file (one line); grpc.health.v1 and reflection stay open.
  std::string auth_token_file;
  // Sent as initial metadata "myops-replica" on every response (frontends/grpc/replica_identity.h),
  // so clients can tell replicas apart. "" sends none.
  std::string replica_name;
  // System shared memory (frontends/oip/shm.h): off unless `allow`.
  struct SharedMemory {
    bool allow = false;
    SharedMemoryLimits limits;
  } shared_memory;
  // Connections older than this get a GOAWAY (gRPC's GRPC_ARG_MAX_CONNECTION_AGE_MS, with
  // +-10% jitter): clients reconnect and re-resolve, so long-lived ones spread onto
  // replicas added since. 0: connections live forever.
  std::chrono::milliseconds max_connection_age{0};
  // After that GOAWAY, how long RPCs still open on the old connection may take before
  // they are cancelled (GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS). 0: no limit.
  std::chrono::milliseconds max_connection_age_grace{0};
};

// Owns the executor, the service and the grpc::Server. port() and Describe() are
// thread-safe; Shutdown is called by one thread (the owner), possibly more than once.
class Server {
 public:
  // Starts listening; the health status of "", "myops.v1.Myops" and
  // "inference.GRPCInferenceService" is SERVING.
  static absl::StatusOr<std::unique_ptr<Server>> Start(const ServerOptions& options);
  // As above, with a given executor instead of one built from options.executor.
  static absl::StatusOr<std::unique_ptr<Server>> Start(const ServerOptions& options,
                                                       std::unique_ptr<Executor> executor);
  ~Server();

  int port() const { return port_; }
  int metrics_port() const { return metrics_ ? metrics_->port() : 0; }  // 0: off
  int health_port() const { return health_port_; }                      // 0: off
  int http_port() const { return http_ ? http_->port() : 0; }           // 0: off
  // The pipeline, for its metrics and memory budget (thread-safe reads).
  const Pipeline& pipeline() const { return *pipeline_; }
  // One line: address, devices, versions, limits, workers.
  std::string Describe() const;

  // First step of a graceful stop: health turns NOT_SERVING (load balancers and probes
  // stop sending) while RPCs are still served. Requests already on the wire need this
  // window: gRPC cancels a call whose request message is still arriving at Shutdown.
  void BeginDrain();

  // Graceful stop: health NOT_SERVING, new RPCs are refused, RPCs in flight may complete
  // until `grace` has passed (then they are cancelled), and the executor is drained.
  // Idempotent.
  void Shutdown(std::chrono::milliseconds grace);

 private:
  Server() = default;
  // Starts the health-only, HTTP/REST and metrics endpoints that `options_` asks for.
  absl::Status StartEndpoints(const BearerAuth& auth);

  ServerOptions options_;
  std::unique_ptr<Executor> executor_;
  // Registered regions (null: shared memory off); outlives the services using it, and
  // unmaps every region when the server is destroyed.
  std::unique_ptr<SharedMemoryRegistry> shared_memory_;
  // What every front end's requests go through; outlives the front ends.
  std::unique_ptr<Pipeline> pipeline_;
  std::unique_ptr<MyopsService> service_;  // myops.v1.Myops over pipeline_
  std::unique_ptr<KServeService> kserve_;  // inference.GRPCInferenceService over pipeline_
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<KServeHttp> http_;          // REST over pipeline_; stopped before the executor.
  std::unique_ptr<MetricsEndpoint> metrics_;  // Reads pipeline_; serves until Shutdown ends.
  std::unique_ptr<grpc::Server> health_server_;  // Only grpc.health.v1, plaintext.
  int health_port_ = 0;
  int port_ = 0;
  bool stopped_ = false;
};

}  // namespace myops::server
