// The Open Inference Protocol's HTTP/REST front end (see frontends/oip/rest/service.h).
#include "frontends/oip/rest/service.h"

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
#include "http/server.h"
#include "myops/version.h"

namespace myops::server {
namespace {

using Json = nlohmann::json;

constexpr absl::string_view kModelsPath = "/v2/models/";

// Whether the request's `method` is `wanted`; answers 405 (with Allow) when it is not.
bool Allowed(HttpExchange* conn, absl::string_view wanted, absl::string_view method,
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
  HttpServerOptions server;
  server.listen = *listen;
  server.tls = options.tls;
  server.workers = kWorkers;
  server.queued_requests = kQueuedRequests;
  server.max_connections = options.max_connections;
  server.max_connections_per_address = options.max_connections_per_address;
  server.stall_timeout_ms = pipeline->limits().stall_timeout_ms;
  server.keep_alive_timeout_ms = kKeepAliveTimeoutMs;
  server.max_head_bytes = kMaxHeadBytes;
  KServeHttp* self = http.get();
  auto started = HttpServer::Start(
      server, [self](HttpExchange& exchange) { self->Serve(&exchange); },
      [self](const RequestHead& head, std::string* response) {
        return self->AnswerHealth(head, response);
      });
  if (!started.ok()) return started.status();
  http->server_ = *std::move(started);
  return http;
}

bool KServeHttp::AnswerHealth(const RequestHead& head, std::string* response) const {
  // Health is open, as grpc.health.v1 is: probes carry no token. A wrong method goes to a
  // worker, which answers 405.
  if (head.method != "GET") return false;
  if (head.path == "/v2/health/live") {
    *response = ResponseText(200, "{\"live\":true}", "application/json");
  } else if (head.path == "/v2/health/ready") {
    *response = ready() ? ResponseText(200, "{\"ready\":true}", "application/json")
                        : ResponseText(400, kserve::ErrorJson("the server is draining"),
                                       "application/json");
  } else {
    return false;
  }
  return true;
}

void KServeHttp::Serve(HttpExchange* conn) {
  const absl::string_view method = conn->method();
  std::string path;
  if (!DecodePath(conn->path(), &path)) {
    return RespondError(
        conn, absl::InvalidArgumentError("the request path holds a malformed percent-escape"));
  }
  auto only = [&](absl::string_view wanted) { return Allowed(conn, wanted, method, path); };
  // Health is open, as grpc.health.v1 is: probes carry no token. (GETs are answered on
  // the event loop, AnswerHealth; these answer its other methods.)
  if (path == "/v2/health/live") {
    if (only("GET")) Respond(conn, 200, "{\"live\":true}");
    return;
  }
  if (path == "/v2/health/ready") {
    if (!only("GET")) return;
    if (ready()) return Respond(conn, 200, "{\"ready\":true}");
    return Respond(conn, 400, kserve::ErrorJson("the server is draining"));
  }
  auto client = auth_.TenantOfHeader(conn->header("Authorization"));
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

void KServeHttp::ServeModel(HttpExchange* conn, absl::string_view method, const std::string& path,
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

void KServeHttp::ServeSharedMemory(HttpExchange* conn, const std::string& path,
                                   const std::string& client) {
  auto endpoint = kserve::ParseSharedMemoryPath(path);
  if (!endpoint.ok()) return RespondError(conn, endpoint.status());
  if (conn->method() != endpoint->method()) {
    return Respond(conn, 405,
                   kserve::ErrorJson(
                       absl::StrCat(path, " takes ", endpoint->method(), ", not ", conn->method())),
                   "application/json", {}, 0, absl::StrCat("Allow: ", endpoint->method(), "\r\n"));
  }
  const int64_t length = conn->content_length();
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

bool KServeHttp::ServeExtension(HttpExchange* conn, absl::string_view method,
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
    const int64_t length = conn->content_length();
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
