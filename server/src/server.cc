// Server assembly (see server.h).
#include "server.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "frontends/grpc/http2_window.h"
#include "frontends/grpc/replica_identity.h"
#include "frontends/myops_v1/codec.h"
#include "http/tls.h"
#include "myops/common/callback_threads.h"
#include "myops/common/token_file.h"
#include "myops/version.h"

namespace myops::server {
namespace {

absl::StatusOr<std::string> ReadFile(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", what, " file \"", path, "\""));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A cheap sanity check of a PEM file's framing, so that a wrong file (a key given as the
// certificate, a DER file) is named at startup instead of gRPC's "cannot listen".
absl::Status CheckPem(const std::string& pem, const char* flag, const std::string& path,
                      const char* kind, const char* begin, const char* end) {
  const size_t at = pem.find(begin);
  if (at == std::string::npos || pem.find(end, at) == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(flag, " file \"", path, "\" is not ", kind,
                                                   " (no \"", begin, "...", end, "\" block)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> Credentials(const TlsOptions& tls) {
  if (tls.cert_file.empty() && tls.key_file.empty()) {
    // A client CA alone would leave the server in plaintext while its operator believes
    // clients are authenticated: refuse rather than ignore it.
    if (!tls.client_ca_file.empty()) {
      return absl::InvalidArgumentError(
          "--tls-client-ca needs --tls-cert and --tls-key (mutual TLS is on top of TLS)");
    }
    return grpc::InsecureServerCredentials();
  }
  if (tls.cert_file.empty() || tls.key_file.empty()) {
    return absl::InvalidArgumentError("TLS needs both --tls-cert and --tls-key");
  }
  auto cert = ReadFile(tls.cert_file, "--tls-cert");
  if (!cert.ok()) return cert.status();
  auto key = ReadFile(tls.key_file, "--tls-key");
  if (!key.ok()) return key.status();
  if (auto s = CheckPem(*cert, "--tls-cert", tls.cert_file, "a PEM certificate",
                        "-----BEGIN CERTIFICATE-----", "-----END CERTIFICATE-----");
      !s.ok()) {
    return s;
  }
  if (auto s = CheckPem(*key, "--tls-key", tls.key_file, "a PEM private key", "-----BEGIN ",
                        "PRIVATE KEY-----");
      !s.ok()) {
    return s;
  }
  // The files as OpenSSL loads them (the HTTP port's loader): a key that does not match
  // its certificate named here, rather than in gRPC's log once the port fails to open.
  if (std::string error = CheckTlsFiles({tls.cert_file, tls.key_file, tls.client_ca_file});
      !error.empty()) {
    return absl::InvalidArgumentError(error);
  }
  grpc::SslServerCredentialsOptions ssl;
  ssl.pem_key_cert_pairs.push_back({*key, *cert});
  if (!tls.client_ca_file.empty()) {
    auto ca = ReadFile(tls.client_ca_file, "--tls-client-ca");
    if (!ca.ok()) return ca.status();
    if (auto s = CheckPem(*ca, "--tls-client-ca", tls.client_ca_file, "a PEM certificate",
                          "-----BEGIN CERTIFICATE-----", "-----END CERTIFICATE-----");
        !s.ok()) {
      return s;
    }
    ssl.pem_root_certs = *ca;
    ssl.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(ssl);
}

// The gRPC server's transport: message sizes, what clients may make gRPC hold before a
// handler runs (`budget_bytes`: the memory budget), connection ages, the replica's
// metadata.
void ConfigureTransport(const ServerOptions& options, int64_t budget_bytes,
                        grpc::ServerBuilder* builder) {
  // gRPC sets SO_REUSEPORT by default: a second server on a port in use would start and
  // silently take a share of its connections. A port in use is a startup error instead.
  builder->AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  auto clamp = [](int64_t bytes) {
    return static_cast<int>(std::min<int64_t>(bytes, std::numeric_limits<int>::max()));
  };
  builder->SetMaxReceiveMessageSize(clamp(options.limits.max_message_bytes));
  // A response is its request plus a few fields: never refuse one the request fit.
  builder->SetMaxSendMessageSize(
      clamp(options.limits.max_message_bytes + kMaxResponseOverheadBytes));
  // gRPC's own bounds on what clients can make it hold before a handler runs: HTTP/2
  // streams per connection, their receive window (below), and a memory quota for the
  // transport (beyond it gRPC resets streams; the fixed window does not shrink under
  // its pressure).
  builder->AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS,
                              clamp(options.limits.max_concurrent_streams));
  // A fixed receive window: no round trip for requests under it, and no more held for a
  // stream the server stopped reading; a stream it reads gets the rest of its message at
  // once (frontends/grpc/http2_window.h).
  SetHttp2Windows(options.limits.http2_window_bytes, options.limits.max_message_bytes, builder);
  auto millis = [&clamp](std::chrono::milliseconds ms) { return clamp(ms.count()); };
  if (options.max_connection_age.count() > 0) {
    builder->AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_MS, millis(options.max_connection_age));
    if (options.max_connection_age_grace.count() > 0) {
      builder->AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS,
                                  millis(options.max_connection_age_grace));
    }
  }
  if (!options.replica_name.empty()) {
    std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> creators;
    creators.push_back(ReplicaMetadataFactory(options.replica_name));
    builder->experimental().SetInterceptorCreators(std::move(creators));
  }
  // Sized so that one message of the largest size can still arrive (and be refused with
  // a precise status) when the budget is full: below that, gRPC resets streams itself.
  grpc::ResourceQuota quota("myops-server");
  quota.Resize(static_cast<size_t>(budget_bytes + options.limits.max_message_bytes +
                                   kMaxResponseOverheadBytes));
  builder->SetResourceQuota(quota);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Server>> Server::Start(const ServerOptions& options) {
  auto executor = Executor::Create(options.executor);
  if (!executor.ok()) return executor.status();
  return Start(options, std::move(*executor));
}

absl::StatusOr<std::unique_ptr<Server>> Server::Start(const ServerOptions& options,
                                                      std::unique_ptr<Executor> executor) {
  auto credentials = Credentials(options.tls);
  if (!credentials.ok()) return credentials.status();
  BearerAuth auth;
  if (!options.auth_token_file.empty()) {
    auto from_file = BearerAuth::FromFile(options.auth_token_file);
    if (!from_file.ok()) return from_file.status();
    auth = *std::move(from_file);
  }
  std::unique_ptr<Server> s(new Server());
  s->options_ = options;
  s->executor_ = std::move(executor);
  if (options.shared_memory.allow) {
    s->shared_memory_ = std::make_unique<SharedMemoryRegistry>(options.shared_memory.limits);
  }
  s->pipeline_ =
      std::make_unique<Pipeline>(s->executor_.get(), options.limits, s->shared_memory_.get());
  s->service_ = std::make_unique<MyopsService>(s->pipeline_.get(), auth);
  s->kserve_ = std::make_unique<KServeService>(s->pipeline_.get(), auth);

  grpc::EnableDefaultHealthCheckService(true);
  if (options.reflection) grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  SetCallbackThreads(options.grpc_threads);
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options.address, *credentials, &s->port_);
  ConfigureTransport(options, s->pipeline_->budget().limit(), &builder);
  builder.RegisterService(s->service_.get());
  builder.RegisterService(s->kserve_.get());
  s->server_ = builder.BuildAndStart();
  if (!s->server_ || s->port_ == 0) {
    s->executor_->Shutdown();
    return absl::UnavailableError(absl::StrCat(
        "cannot listen on ", options.address,
        options.tls.cert_file.empty()
            ? " (address in use or not local? gRPC's log above says why)"
            : " (address in use, or --tls-cert and --tls-key do not match? gRPC's log above "
              "says why)"));
  }
  if (absl::Status started = s->StartEndpoints(auth); !started.ok()) {
    s->Shutdown(std::chrono::milliseconds(0));
    return started;
  }
  for (grpc::Server* server : {s->server_.get(), s->health_server_.get()}) {
    if (server == nullptr) continue;
    auto* health = server->GetHealthCheckService();
    health->SetServingStatus(true);
    health->SetServingStatus("myops.v1.Myops", true);
    health->SetServingStatus("inference.GRPCInferenceService", true);
  }
  return s;
}

absl::Status Server::StartEndpoints(const BearerAuth& auth) {
  if (!options_.health_address.empty()) {
    grpc::ServerBuilder health_builder;  // No services: gRPC adds the default health one.
    health_builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
    health_builder.AddListeningPort(options_.health_address, grpc::InsecureServerCredentials(),
                                    &health_port_);
    health_server_ = health_builder.BuildAndStart();
    if (!health_server_ || health_port_ == 0) {
      return absl::UnavailableError(
          absl::StrCat("cannot listen for health checks on ", options_.health_address));
    }
  }
  if (!options_.http_address.empty()) {
    HttpOptions http{options_.http_address,
                     {options_.tls.cert_file, options_.tls.key_file, options_.tls.client_ca_file},
                     options_.http_max_connections,
                     options_.http_max_connections_per_address};
    auto started = KServeHttp::Start(http, pipeline_.get(), auth);
    if (!started.ok()) return started.status();
    http_ = std::move(*started);
  }
  if (!options_.metrics_address.empty()) {
    std::vector<std::string> passwords;
    if (options_.metrics_auth) {
      if (options_.auth_token_file.empty()) {
        return absl::InvalidArgumentError(
            "--metrics-auth needs --auth-token-file (its tokens are the scrapes' passwords)");
      }
      auto tokens = common::ReadTokenList(options_.auth_token_file, "--auth-token-file");
      if (!tokens.ok()) return tokens.status();
      passwords = *std::move(tokens);
    }
    HttpTlsFiles tls;
    if (options_.metrics_tls) {
      if (options_.tls.cert_file.empty()) {
        return absl::InvalidArgumentError(
            "--metrics-tls needs --tls-cert and --tls-key (the metrics port serves them)");
      }
      tls = {options_.tls.cert_file, options_.tls.key_file, options_.tls.client_ca_file};
    }
    auto metrics = MetricsEndpoint::Start(options_.metrics_address, pipeline_->metrics(),
                                          std::move(passwords), tls);
    if (!metrics.ok()) return metrics.status();
    metrics_ = std::move(*metrics);
  }
  return absl::OkStatus();
}

Server::~Server() { Shutdown(std::chrono::milliseconds(0)); }

namespace {
// "3 served (myops::scale_shift, ...)": the first few, for the start-up line.
std::string ServedOps(const RuntimeInfo& info) {
  std::vector<std::string> names;
  for (const OpInfo& op : info.registry->ops()) {
    if (op.served) names.push_back(op.QualifiedName());
  }
  const size_t shown = std::min<size_t>(names.size(), 4);
  return absl::StrCat(names.size(), " served (",
                      absl::StrJoin(names.begin(), names.begin() + shown, ", "),
                      names.size() > shown ? ", ..." : "", ")");
}
}  // namespace

std::string Server::Describe() const {
  const RuntimeInfo& info = executor_->info();
  const auto& limits = options_.limits;
  // HOST:PORT as bound: the configured host with the port actually taken (port 0: any).
  auto bound = [](const std::string& address, int port) {
    return absl::StrCat(address.substr(0, address.rfind(':')), ":", port);
  };
  return absl::StrCat(
      "myops-server ", MYOPS_VERSION_STRING, " listening on ", bound(options_.address, port_),
      options_.tls.cert_file.empty() ? "" : " (TLS)",
      options_.auth_token_file.empty() ? "" : " (bearer token)",
      " | devices: ", executor_->devices().Names(), " | operators: ", ServedOps(info), " | torch ",
      info.torch_version,
      info.cuda_version.empty() ? "" : absl::StrCat(", CUDA ", info.cuda_version),
      options_.replica_name.empty() ? "" : absl::StrCat(" | replica ", options_.replica_name),
      " | workers: ", info.workers,
      " | grpc threads: ", CallbackThreads() > 0 ? absl::StrCat(CallbackThreads()) : "gRPC's own",
      " | limits: max_message_bytes=", limits.max_message_bytes,
      " max_elements=", limits.tensor.max_elements, " max_inflight=", limits.max_inflight,
      " max_inflight_bytes=", pipeline_->budget().limit(), " max_streams=", limits.max_streams,
      " http2_window_bytes=",
      FixedHttp2WindowBytes() > 0 ? absl::StrCat(FixedHttp2WindowBytes())
                                  : "65535 (gRPC without the window hook)",
      " http2_read_grant_bytes=",
      Http2ReadGrantBytes() > 0 ? absl::StrCat(Http2ReadGrantBytes()) : "1048576 (gRPC's own)",
      health_server_ ? " | plaintext health on " + bound(options_.health_address, health_port_)
                     : "",
      http_ ? " | http on " + bound(options_.http_address, http_->port()) +
                  (options_.tls.cert_file.empty() ? "" : " (TLS)")
            : "",
      metrics_ ? " | metrics on " + bound(options_.metrics_address, metrics_->port()) + "/metrics" +
                     (options_.metrics_tls ? " (TLS)" : "")
               : "",
      shared_memory_
          ? absl::StrCat(" | shared memory: up to ", options_.shared_memory.limits.max_regions,
                         " regions, ", options_.shared_memory.limits.max_total_bytes, " bytes")
          : "");
}

void Server::BeginDrain() {
  if (kserve_) kserve_->BeginDrain();  // ServerReady false
  if (http_) http_->BeginDrain();      // /v2/health/ready false
  for (grpc::Server* server : {server_.get(), health_server_.get()}) {
    if (server) server->GetHealthCheckService()->Shutdown();  // NOT_SERVING for every service
  }
}

void Server::Shutdown(std::chrono::milliseconds grace) {
  if (stopped_) return;
  stopped_ = true;
  if (server_) {
    BeginDrain();
    server_->Shutdown(std::chrono::system_clock::now() + grace);
  }
  http_.reset();  // Stops accepting; requests being served finish (the executor still runs).
  if (executor_) executor_->Shutdown();
  // Every region unmapped: the clients' objects are theirs to unlink from now on.
  if (shared_memory_) shared_memory_->UnregisterEveryOwner();
  if (health_server_) health_server_->Shutdown(std::chrono::system_clock::now());
  metrics_.reset();
}

}  // namespace myops::server
