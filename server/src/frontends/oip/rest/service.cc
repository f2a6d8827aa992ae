// The Open Inference Protocol's HTTP/REST front end on civetweb (see frontends/oip/rest/service.h).
#include "frontends/oip/rest/service.h"

#include <civetweb.h>

#include <nlohmann/json.hpp>
#include <vector>
#include "absl/strings/string_view.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "frontends/oip/codec.h"
#include "frontends/oip/extensions.h"
#include "frontends/oip/rest/json.h"
#include "frontends/oip/rest/meta.h"
#include "frontends/oip/rest/respond.h"
#include "frontends/oip/rest/shm.h"
#include "http/listener.h"
#include "myops/version.h"

namespace myops::server {
namespace {

using Json = nlohmann::json;

constexpr absl::string_view kModelsPath = "/v2/models/";

// Whether the request's `method` is `wanted`; answers 405 (with Allow) when it is not.
bool Allowed(mg_connection* conn, absl::string_view wanted, absl::string_view method,
             const std::string& path) {
  if (method == wanted) return true;
  Respond(conn, 405, kserve::ErrorJson(absl::StrCat(path, " takes ", wanted, ", not ", method)),
          "application/json", {}, 0, absl::StrCat("Allow: ", wanted, "\r\n"));
  return false;
}

}  // namespace

absl::StatusOr<std::unique_ptr<KServeHttp>> KServeHttp::Start(const HttpOptions& options,
                                                              Pipeline* pipeline, BearerAuth auth) {
  auto listen = ParseListenAddress(options.address, "HTTP address");
  if (!listen.ok()) return listen.status();
  std::unique_ptr<KServeHttp> http(new KServeHttp(pipeline, std::move(auth)));
  http->tls_ = options.tls;
  const bool tls = !options.tls.cert_file.empty();
  // "s": this port speaks TLS only (no plaintext fallback).
  const std::string ports = absl::StrCat(listen->host, ":", listen->port, tls ? "s" : "");
  // No document_root: civetweb serves no files; begin_request answers every request.
  const std::string threads = std::to_string(kThreads);
  const std::string queue = std::to_string(kQueuedConnections);
  // A client that sends no byte of its request, or takes none of its response, for this
  // long is cut off (civetweb's timeout restarts with each byte): --stall-timeout-ms.
  const std::string request_timeout = std::to_string(pipeline->limits().stall_timeout_ms);
  const std::string keep_alive_timeout = std::to_string(kKeepAliveTimeoutMs);
  const std::string header_bytes = std::to_string(kMaxHeaderBytes);
  const char* civet_options[] = {"listening_ports",
                                 ports.c_str(),
                                 "num_threads",
                                 threads.c_str(),
                                 "connection_queue",
                                 queue.c_str(),
                                 "listen_backlog",
                                 queue.c_str(),
                                 "request_timeout_ms",
                                 request_timeout.c_str(),
                                 "keep_alive_timeout_ms",
                                 keep_alive_timeout.c_str(),
                                 "enable_keep_alive",
                                 "yes",
                                 "tcp_nodelay",
                                 "1",
                                 "max_request_size",
                                 header_bytes.c_str(),
                                 nullptr};
  mg_callbacks callbacks{};
  callbacks.begin_request = BeginRequest;
  if (tls) callbacks.init_ssl = InitSsl;
  callbacks.log_message = LogStartMessage;
  // Requests reach `http` as the context's user data.
  std::string errors;
  CollectStartErrors(&errors, [&] {
    mg_init_library(tls ? MG_FEATURES_TLS : 0);
    http->context_ = mg_start(&callbacks, http.get(), civet_options);
  });
  if (http->context_ == nullptr) {
    return absl::UnavailableError(absl::StrCat("cannot serve HTTP on ", options.address, ": ",
                                               !http->tls_error_.empty() ? http->tls_error_
                                               : errors.empty()          ? "civetweb did not start"
                                                                         : errors));
  }
  mg_server_port bound[1];
  if (mg_get_server_ports(http->context_, 1, bound) != 1 || bound[0].port <= 0) {
    return absl::InternalError(absl::StrCat("HTTP on ", options.address, ": no port was bound"));
  }
  http->port_ = bound[0].port;
  http->wake_ip_ = LocalAddressOf(listen->host);
  return http;
}

KServeHttp::~KServeHttp() {
  if (context_ == nullptr) return;
  StopListener([this] { mg_stop(context_); }, wake_ip_, port_);
  mg_exit_library();
}

int KServeHttp::InitSsl(void* ssl_ctx, void* self) {
  auto* http = static_cast<KServeHttp*>(self);
  // 1: the context is set up here (civetweb loads no certificate itself); -1: refuse.
  return ConfigureHttpTls(ssl_ctx, http->tls_, &http->tls_error_) ? 1 : -1;
}

int KServeHttp::BeginRequest(mg_connection* conn) {
  auto* self = static_cast<KServeHttp*>(mg_get_user_data(mg_get_context(conn)));
  self->Serve(conn);
  return 1;  // handled
}

void KServeHttp::Serve(mg_connection* conn) {
  const mg_request_info* info = mg_get_request_info(conn);
  const absl::string_view method = info->request_method;
  const std::string path = info->local_uri_raw != nullptr ? info->local_uri_raw : "";
  auto only = [&](absl::string_view wanted) { return Allowed(conn, wanted, method, path); };
  // Health is open, as grpc.health.v1 is: probes carry no token.
  if (path == "/v2/health/live") {
    if (only("GET")) Respond(conn, 200, "{\"live\":true}");
    return;
  }
  if (path == "/v2/health/ready") {
    if (!only("GET")) return;
    if (ready()) return Respond(conn, 200, "{\"ready\":true}");
    return Respond(conn, 400, kserve::ErrorJson("the server is draining"));
  }
  auto client = auth_.TenantOfHeader(mg_get_header(conn, "Authorization"));
  if (!client.ok()) return RespondError(conn, client.status());
  if (path == "/v2") {
    if (!only("GET")) return;
    Json meta = {{"name", "myops"},
                 {"version", MYOPS_VERSION_STRING},
                 {"extensions",
                  kserve::ServerExtensions(/*rest=*/true, pipeline_->shared_memory() != nullptr)}};
    return Respond(conn, 200, meta.dump());
  }
  if (path == "/v2/models/stats") {  // every model's (model names always hold "::")
    if (!only("GET")) return;
    inference::ModelStatisticsResponse stats;
    if (absl::Status s = kserve::DescribeStatsOf(pipeline_->registry(), pipeline_->model_stats(),
                                                 "", "", &stats);
        !s.ok()) {
      return RespondError(conn, s);
    }
    return Respond(conn, 200, kserve::StatsJson(stats).dump());
  }
  if (absl::StartsWith(path, kserve::kSharedMemoryPath)) {
    return ServeSharedMemory(conn, path, *client);
  }
  if (ServeExtension(conn, method, path)) return;
  if (!absl::StartsWith(path, kModelsPath)) {
    return RespondError(conn, absl::NotFoundError(absl::StrCat("no endpoint ", path)));
  }
  ServeModel(conn, method, path, *client);
}

void KServeHttp::ServeModel(mg_connection* conn, absl::string_view method, const std::string& path,
                            const std::string& client) {
  auto only = [&](absl::string_view wanted) { return Allowed(conn, wanted, method, path); };
  // {model}[/versions/{version}][/ready|/config|/stats|/infer]
  std::vector<std::string> parts = absl::StrSplit(path.substr(kModelsPath.size()), '/');
  const std::string model = parts[0];
  std::string version;
  size_t next = 1;
  if (parts.size() >= 3 && parts[1] == "versions") version = parts[2], next = 3;
  const std::string action = next < parts.size() ? parts[next] : "";
  if (next + 1 < parts.size() || (next < parts.size() && action != "ready" && action != "config" &&
                                  action != "stats" && action != "infer")) {
    return RespondError(conn, absl::NotFoundError(absl::StrCat("no endpoint ", path)));
  }
  if (action == "infer") {
    if (only("POST")) Infer(conn, model, version, client);
    return;
  }
  if (!only("GET")) return;
  const OpRegistry& registry = pipeline_->registry();
  if (action == "stats") {
    inference::ModelStatisticsResponse stats;
    if (absl::Status s =
            kserve::DescribeStatsOf(registry, pipeline_->model_stats(), model, version, &stats);
        !s.ok()) {
      return RespondError(conn, s);
    }
    return Respond(conn, 200, kserve::StatsJson(stats).dump());
  }
  auto index = kserve::FindModel(registry, model, version);
  if (action == "ready") {
    // An unknown model is not ready (as Triton answers), not an error.
    if (!index.ok()) return RespondError(conn, 400, index.status());
    if (ready()) return Respond(conn, 200, "{\"ready\":true}");
    return Respond(conn, 400, kserve::ErrorJson("the server is draining"));
  }
  if (!index.ok()) return RespondError(conn, index.status());
  const OpInfo& op = registry.ops()[static_cast<size_t>(*index)];
  if (action == "config") {
    inference::ModelConfig config;
    kserve::DescribeModelConfig(op, &config);
    return Respond(conn, 200, kserve::ConfigJson(config).dump());
  }
  inference::ModelMetadataResponse meta;
  kserve::DescribeModel(op, &meta);
  Respond(conn, 200, kserve::MetadataJson(meta).dump());
}

void KServeHttp::ServeSharedMemory(mg_connection* conn, const std::string& path,
                                   const std::string& client) {
  const mg_request_info* info = mg_get_request_info(conn);
  auto endpoint = kserve::ParseSharedMemoryPath(path);
  if (!endpoint.ok()) return RespondError(conn, endpoint.status());
  if (absl::string_view(info->request_method) != endpoint->method()) {
    return Respond(conn, 405,
                   kserve::ErrorJson(absl::StrCat(path, " takes ", endpoint->method(), ", not ",
                                                  info->request_method)),
                   "application/json", {}, 0, absl::StrCat("Allow: ", endpoint->method(), "\r\n"));
  }
  const int64_t length = info->content_length;
  if (length > kserve::kMaxSharedMemoryBodyBytes) {
    return RespondError(conn, 413,
                        absl::InvalidArgumentError(absl::StrCat(
                            "a shared memory request body takes at most ",
                            kserve::kMaxSharedMemoryBodyBytes, " bytes, not ", length)));
  }
  std::string body(static_cast<size_t>(std::max<int64_t>(length, 0)), '\0');
  if (absl::Status read = ReadBody(conn, length, body.data()); !read.ok()) {
    return RespondError(conn, 400, read);
  }
  auto reply =
      kserve::AnswerSharedMemory(OwnedRegions(pipeline_->shared_memory(), client), *endpoint, body);
  if (!reply.ok()) return RespondError(conn, reply.status());
  Respond(conn, 200, *reply);
}

bool KServeHttp::ServeExtension(mg_connection* conn, absl::string_view method,
                                const std::string& path) {
  const std::vector<std::string> parts = absl::StrSplit(path, '/');  // "", "v2", ...
  auto is = [&](std::initializer_list<absl::string_view> want) {
    if (parts.size() != want.size() + 2) return false;
    size_t i = 2;
    for (absl::string_view w : want) {
      if (w != "*" && parts[i] != w) return false;
      ++i;
    }
    return true;
  };
  auto only = [&](absl::string_view wanted) { return Allowed(conn, wanted, method, path); };
  // Bodies of these requests say nothing the answer depends on: read, then dropped, so
  // the connection stays usable.
  auto drain = [&]() -> bool {
    const int64_t length = mg_get_request_info(conn)->content_length;
    if (length > kserve::kMaxSharedMemoryBodyBytes) {
      RespondError(conn, 413,
                   absl::InvalidArgumentError(absl::StrCat("a request body here takes at most ",
                                                           kserve::kMaxSharedMemoryBodyBytes,
                                                           " bytes, not ", length)));
      return false;
    }
    std::string body(static_cast<size_t>(std::max<int64_t>(length, 0)), '\0');
    if (absl::Status read = ReadBody(conn, length, body.data()); !read.ok()) {
      RespondError(conn, 400, read);
      return false;
    }
    return true;
  };
  if (parts.size() < 3 || parts[1] != "v2") return false;
  if (is({"repository", "index"})) {
    if (!only("POST") || !drain()) return true;
    Json index = Json::array();
    for (const kserve::IndexEntry& e : kserve::RepositoryIndex(pipeline_->registry())) {
      index.push_back({{"name", e.name}, {"version", e.version}, {"state", e.state}});
    }
    Respond(conn, 200, index.dump());
    return true;
  }
  if (is({"repository", "models", "*", "load"}) || is({"repository", "models", "*", "unload"})) {
    if (only("POST") && drain()) {
      RespondError(conn, kserve::RepositoryControlRefused(parts[4], parts[5] == "load"));
    }
    return true;
  }
  if (is({"trace", "setting"}) || is({"models", "*", "trace", "setting"}) || is({"logging"})) {
    if (method != "GET" && method != "POST") {
      Allowed(conn, "GET or POST", method, path);  // 405
    } else if (method == "GET" || drain()) {
      RespondError(conn, parts[2] == "logging" ? kserve::LogSettingsRefused()
                                               : kserve::TraceSettingsRefused());
    }
    return true;
  }
  if (parts[2] != "cudasharedmemory") return false;
  if (is({"cudasharedmemory", "status"}) || is({"cudasharedmemory", "region", "*", "status"})) {
    if (only("GET")) Respond(conn, 200, "[]");  // no regions
    return true;
  }
  if (is({"cudasharedmemory", "region", "*", "register"})) {
    if (only("POST") && drain()) RespondError(conn, kserve::CudaSharedMemoryRefused(parts[4]));
    return true;
  }
  if (is({"cudasharedmemory", "unregister"}) ||
      is({"cudasharedmemory", "region", "*", "unregister"})) {
    if (only("POST") && drain()) Respond(conn, 200, "{}");  // none is registered: no error
    return true;
  }
  return false;
}

}  // namespace myops::server
