// The Open Inference Protocol's HTTP/REST front end on civetweb (see frontends/oip/rest/service.h).
#include "frontends/oip/rest/service.h"

#include <civetweb.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <nlohmann/json.hpp>
#include <vector>
#include "absl/strings/string_view.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "frontends/oip/codec.h"
#include "frontends/oip/rest/json.h"
#include "frontends/oip/rest/meta.h"
#include "frontends/oip/rest/shm.h"
#include "http/listener.h"
#include "myops/version.h"
#include "util/clock.h"

namespace myops::server {
namespace {

using Json = nlohmann::json;

const char* Reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 409:
      return "Conflict";
    case 411:
      return "Length Required";
    case 413:
      return "Payload Too Large";
    case 429:
      return "Too Many Requests";
    case 499:
      return "Client Closed Request";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    default:
      return "Internal Server Error";
  }
}

// Writes one response: status line, headers and `body` in one write, then `tail`.
void Respond(mg_connection* conn, int status, absl::string_view body,
             const char* content_type = "application/json",
             const std::vector<absl::string_view>& tail = {}, int64_t tail_bytes = 0,
             absl::string_view extra_headers = "") {
  std::string out =
      absl::StrCat("HTTP/1.1 ", status, " ", Reason(status), "\r\nContent-Type: ", content_type,
                   "\r\nContent-Length: ", static_cast<int64_t>(body.size()) + tail_bytes, "\r\n",
                   extra_headers, "\r\n");
  out.append(body.data(), body.size());
  mg_write(conn, out.data(), out.size());
  for (absl::string_view part : tail) {
    if (!part.empty()) mg_write(conn, part.data(), part.size());
  }
}

void RespondError(mg_connection* conn, int http_status, const absl::Status& status) {
  Respond(conn, http_status, kserve::ErrorJson(status.message()));
}

void RespondError(mg_connection* conn, const absl::Status& status) {
  RespondError(conn, HttpStatusOf(status.code()), status);
}

// A REST inference on its way through the pipeline: the body its views point into.
struct RestCallState : CallState {
  std::unique_ptr<char[]> body;
  kserve::RestInferRequest request;
  const OpInfo* op_info = nullptr;
  std::vector<kserve::OutputRef> selected;
  BudgetReservation response_reservation;     // the response's JSON, while it is built and sent
  std::vector<SharedMemorySlice> shm_inputs;  // regions input views point into
  std::vector<BudgetReservation> shm_copies;  // BOOL and integer inputs copied out of them
  kserve::ShmOutputs shm_outputs;             // regions of the outputs that go there
};

}  // namespace

int HttpStatusOf(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kOk:
      return 200;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange:
      return 400;
    case absl::StatusCode::kUnauthenticated:
      return 401;
    case absl::StatusCode::kPermissionDenied:
      return 403;
    case absl::StatusCode::kNotFound:
      return 404;
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kAborted:
      return 409;
    case absl::StatusCode::kResourceExhausted:
      return 429;
    case absl::StatusCode::kCancelled:
      return 499;
    case absl::StatusCode::kUnimplemented:
      return 501;
    case absl::StatusCode::kUnavailable:
      return 503;
    case absl::StatusCode::kDeadlineExceeded:
      return 504;
    default:
      return 500;
  }
}

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
  const std::string request_timeout = std::to_string(kRequestTimeoutMs);
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
  auto only = [&](absl::string_view wanted) {
    if (method == wanted) return true;
    Respond(conn, 405, kserve::ErrorJson(absl::StrCat(path, " takes ", wanted, ", not ", method)),
            "application/json", {}, 0, absl::StrCat("Allow: ", wanted, "\r\n"));
    return false;
  };
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
  if (absl::Status denied = auth_.CheckHeader(mg_get_header(conn, "Authorization")); !denied.ok()) {
    return RespondError(conn, denied);
  }
  if (path == "/v2") {
    if (!only("GET")) return;
    Json meta = {
        {"name", "myops"},
        {"version", MYOPS_VERSION_STRING},
        {"extensions", {"model_configuration", "parameters", "binary_tensor_data", "statistics"}}};
    if (pipeline_->shared_memory() != nullptr) meta["extensions"].push_back("system_shared_memory");
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
  if (absl::StartsWith(path, kserve::kSharedMemoryPath)) return ServeSharedMemory(conn, path);
  static constexpr absl::string_view kModels = "/v2/models/";
  if (!absl::StartsWith(path, kModels)) {
    return RespondError(conn, absl::NotFoundError(absl::StrCat("no endpoint ", path)));
  }
  // {model}[/versions/{version}][/ready|/config|/stats|/infer]
  std::vector<std::string> parts = absl::StrSplit(path.substr(kModels.size()), '/');
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
    if (only("POST")) Infer(conn, model, version);
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

void KServeHttp::Infer(mg_connection* conn, const std::string& model, const std::string& version) {
  const auto received = Clock::now();
  const mg_request_info* info = mg_get_request_info(conn);
  const int64_t length = info->content_length;
  const ServiceLimits& limits = pipeline_->limits();
  auto refuse = [&](int http_status, const absl::Status& status) {
    pipeline_->metrics().Record(infer_rpc_, status, {}, 0);
    RespondError(conn, http_status, status);
  };
  if (length < 0) {
    return refuse(411, absl::InvalidArgumentError(
                           "the request body needs a Content-Length (chunked bodies are not "
                           "accepted: the server reserves memory for a body before reading it)"));
  }
  if (length > limits.max_message_bytes) {
    return refuse(413, absl::ResourceExhaustedError(absl::StrCat(
                           "the request body is ", length,
                           " bytes, more than the largest message this server accepts (",
                           limits.max_message_bytes, " bytes, --max-message-bytes)")));
  }
  RestCallState state;
  const char* header_length = mg_get_header(conn, "Inference-Header-Content-Length");
  // The JSON part's size as the header claims (checked once the body is read).
  int64_t json_bytes = length;
  if (header_length != nullptr) {
    json_bytes = std::min<int64_t>(length, std::strtoll(header_length, nullptr, 10));
    if (json_bytes < 0) json_bytes = length;
  }
  absl::Status status = pipeline_->ReserveCallRequest(
      length, length + json_bytes * kserve::kJsonBytesPerByte, &state);
  if (!status.ok()) return refuse(HttpStatusOf(status.code()), status);
  state.body.reset(new char[static_cast<size_t>(length)]);
  for (int64_t got = 0; got < length;) {
    const int n = mg_read(conn, state.body.get() + got, static_cast<size_t>(length - got));
    if (n <= 0) {
      return refuse(400, absl::InvalidArgumentError(absl::StrCat(
                             "the client sent ", got, " of the body's ", length, " bytes")));
    }
    got += n;
  }
  const absl::string_view body(state.body.get(), static_cast<size_t>(length));
  int model_index = -1;  // once the model is known, a refusal counts as its failure
  status = [&]() -> absl::Status {
    const OpRegistry& registry = pipeline_->registry();
    auto index = kserve::FindModel(registry, model, version);
    if (!index.ok()) return index.status();
    model_index = *index;
    state.op_info = &registry.ops()[static_cast<size_t>(*index)];
    auto parts = kserve::SplitBody(
        body, header_length ? std::optional<absl::string_view>(header_length) : std::nullopt);
    if (!parts.ok()) return parts.status();
    const std::string name = state.op_info->QualifiedName();
    if (absl::Status s = kserve::ParseInferRequestJson(name, *parts, limits.tensor, &state.request);
        !s.ok()) {
      return s;
    }
    auto selected = kserve::SelectOutputs(*state.op_info, state.request.outputs);
    if (!selected.ok()) return selected.status();
    auto shm_outputs = kserve::ResolveSharedMemory(
        pipeline_->shared_memory(), *state.op_info, *selected,
        [&](int64_t bytes) {
          return pipeline_->ReserveWorkingMemory(bytes, &state.shm_copies.emplace_back());
        },
        &state.shm_inputs, &state.request);
    if (!shm_outputs.ok()) return shm_outputs.status();
    auto args = kserve::DecodeRestInputs(*state.op_info, state.request);
    if (!args.ok()) return args.status();
    for (const kserve::Parameter& p : state.request.parameters) {
      auto timeout = kserve::TimeoutParameter(*state.op_info, p);
      if (!timeout.ok()) return timeout.status();
      if (timeout->has_value()) state.timeout_us = **timeout;
    }
    state.args = std::move(*args);
    state.selected = std::move(*selected);
    state.shm_outputs = std::move(*shm_outputs);
    state.call.result_buffer =
        kserve::ResultBuffer(*state.op_info, state.selected, state.shm_outputs);
    state.op = name;
    return absl::OkStatus();
  }();
  if (!status.ok()) {
    if (model_index >= 0) pipeline_->RecordModelFailure(model_index, received);
    return refuse(HttpStatusOf(status.code()), status);
  }

  // This worker thread waits for the executor: the pool bounds the requests it serves.
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  Timing timing;
  pipeline_->ProcessCall(
      &state, received, std::chrono::system_clock::time_point::max(), [] { return false; },
      [&](absl::Status s, const Timing& t) {
        std::lock_guard<std::mutex> lock(mu);
        status = std::move(s);
        timing = t;
        done = true;
        cv.notify_one();  // under the lock: the waiter's frame outlives this call
      });
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return done; });
  }
  // The response's binary parts are views of `outputs` (and of the call's results).
  absl::StatusOr<std::vector<kserve::OutputTensor>> outputs;
  kserve::RestInferResponse response;
  if (status.ok()) status = kserve::CheckIntact(state.shm_inputs, state.shm_outputs);
  if (status.ok()) {
    outputs = kserve::ResultOutputs(*state.op_info, state.call, state.selected);
    if (outputs.ok()) {
      if (absl::Status written =
              kserve::WriteShmOutputs(state.selected, state.shm_outputs, &*outputs);
          !written.ok()) {
        outputs = written;
      }
    }
    if (!outputs.ok()) {
      status = outputs.status();
    } else {
      status = pipeline_->ReserveWorkingMemory(kserve::JsonResponseBytes(state.request, *outputs),
                                               &state.response_reservation);
      if (status.ok()) {
        response = kserve::EncodeInferResponseJson(state.op, state.request, *outputs);
      }
    }
  }
  pipeline_->metrics().Record(infer_rpc_, status, timing,
                              static_cast<uint64_t>(state.call.input_bytes));
  if (!status.ok()) return RespondError(conn, status);
  if (response.binary.empty()) return Respond(conn, 200, response.json);
  Respond(conn, 200, response.json, "application/octet-stream", response.binary,
          response.binary_bytes,
          absl::StrCat("Inference-Header-Content-Length: ", response.json.size(), "\r\n"));
}

void KServeHttp::ServeSharedMemory(mg_connection* conn, const std::string& path) {
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
  for (int64_t got = 0; got < length;) {
    const int n = mg_read(conn, body.data() + got, static_cast<size_t>(length - got));
    if (n <= 0) {
      return RespondError(conn, 400,
                          absl::InvalidArgumentError(absl::StrCat(
                              "the client sent ", got, " of the body's ", length, " bytes")));
    }
    got += n;
  }
  auto reply = kserve::AnswerSharedMemory(pipeline_->shared_memory(), *endpoint, body);
  if (!reply.ok()) return RespondError(conn, reply.status());
  Respond(conn, 200, *reply);
}

}  // namespace myops::server
