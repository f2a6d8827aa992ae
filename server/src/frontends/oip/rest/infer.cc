// The HTTP/REST binding's inference, POST /v2/models/{model}[/versions/{v}]/infer: the
// body read within the memory budget, bound to its model as the gRPC binding's requests
// are (frontends/oip/binding.h), run on the pipeline while this worker waits, and
// answered as JSON (with the binary tensor data extension).
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "frontends/oip/binding.h"
#include "frontends/oip/codec.h"
#include "frontends/oip/rest/compression.h"
#include "frontends/oip/rest/json.h"
#include "frontends/oip/rest/respond.h"
#include "frontends/oip/rest/service.h"
#include "http/server.h"
#include "util/clock.h"

namespace myops::server {
namespace {

// A REST inference on its way through the pipeline: the binding's state, and the body
// and parsed request its views point into.
struct RestCallState : kserve::InferCall {
  std::unique_ptr<char[]> body;
  const char* header_length = nullptr;  // Inference-Header-Content-Length; null: absent
  kserve::RestInferRequest request;
  std::vector<kserve::OutputTensor> outputs;  // the response's binary parts view these
  BudgetReservation response_reservation;     // the response's JSON, while built and sent
  std::vector<BudgetReservation> body_steps;  // the body, granted as it arrived
};

// What parsing a body of `bytes` holds besides the body (its JSON part as
// Inference-Header-Content-Length says): aligned copies of its binary part (at most the
// part again) and the parsed JSON.
int64_t ParseBytes(int64_t bytes, const RestCallState* state) {
  int64_t json_bytes = bytes;  // the JSON part's size as the header claims (checked later)
  if (state->header_length != nullptr) {
    json_bytes = std::min<int64_t>(bytes, std::strtoll(state->header_length, nullptr, 10));
    if (json_bytes < 0) json_bytes = bytes;
  }
  return (bytes - json_bytes) + json_bytes * kserve::kJsonBytesPerByte;
}

// Reserves the budget for parsing a body of `bytes` (its JSON part as
// Inference-Header-Content-Length says): aligned copies of its binary part (at most the
// part again) and the parsed JSON; and, unless `body_held` (granted in steps as it was
// read), the body itself, for which it allocates state->body.
absl::Status AdmitBody(Pipeline* pipeline, int64_t bytes, bool body_held, RestCallState* state) {
  const int64_t parsed = ParseBytes(bytes, state);
  absl::Status status =
      pipeline->ReserveCallRequest(bytes, (body_held ? 0 : bytes) + parsed, state);
  if (status.ok() && !body_held) state->body.reset(new char[static_cast<size_t>(bytes)]);
  return status;
}

// Reads `length` bytes of body into `into`, the budget granting them in steps as they
// arrive (ReadBodyInSteps) into `steps`, counted against `account`; `*http_status` for a
// failure.
absl::Status ReadGranted(HttpExchange* conn, Pipeline* pipeline, int64_t length, char* into,
                         std::vector<BudgetReservation>* steps,
                         const std::shared_ptr<ClientAccount>& account, int* http_status) {
  int64_t held = 0;
  absl::Status s = ReadBodyInSteps(conn, length, into, [&](int64_t total) {
    absl::Status granted =
        pipeline->ReserveWorkingMemory(total - held, &steps->emplace_back(), account);
    if (granted.ok()) held = total;
    return granted;
  });
  *http_status = s.ok() || absl::IsInvalidArgument(s) ? 400 : HttpStatusOf(s.code());
  return s;
}

// Reads the request's body into `state`, the budget granting it in steps as it arrives
// and then what parsing it holds (a body that with its parse needs more than the whole
// budget is refused unread); a compressed body (Content-Encoding gzip or deflate) is
// granted as sent, then as it inflates, then as a plain body. 411 without a Content-Length, 413
// over
// --max-message-bytes (sent or inflated), 415 for another encoding, the budget's refusal,
// 400 when the client stops sending or the bytes do not inflate: `*http_status` says which.
absl::Status ReceiveBody(HttpExchange* conn, Pipeline* pipeline, RestCallState* state,
                         int* http_status) {
  const int64_t length = conn->content_length();
  const ServiceLimits& limits = pipeline->limits();
  if (length < 0) {
    *http_status = 411;
    return absl::InvalidArgumentError(
        "the request body needs a Content-Length (chunked bodies are not accepted: the server "
        "reserves memory for a body before reading it)");
  }
  if (length > limits.max_message_bytes) {
    *http_status = 413;
    return absl::ResourceExhaustedError(
        absl::StrCat("the request body is ", length,
                     " bytes, more than the largest message this server accepts (",
                     limits.max_message_bytes, " bytes, --max-message-bytes)"));
  }
  auto encoding = kserve::ContentEncoding(conn->header("Content-Encoding"));
  if (!encoding.ok()) {
    *http_status = 415;
    return encoding.status();
  }
  state->header_length = conn->header("Inference-Header-Content-Length");
  if (*encoding == kserve::Encoding::kIdentity) {
    // A body that with its parse needs more than the whole budget is refused unread.
    if (const int64_t need = length + ParseBytes(length, state);
        need > pipeline->budget().limit()) {
      BudgetReservation never;
      absl::Status s = pipeline->ReserveWorkingMemory(need, &never, nullptr);  // its message
      *http_status = HttpStatusOf(s.code());
      return s;
    }
    // Allocated whole (untouched pages cost nothing), held as it is written.
    state->body.reset(new char[static_cast<size_t>(length)]);
    if (absl::Status s = ReadGranted(conn, pipeline, length, state->body.get(), &state->body_steps,
                                     state->account, http_status);
        !s.ok()) {
      return s;
    }
    if (absl::Status s = AdmitBody(pipeline, length, /*body_held=*/true, state); !s.ok()) {
      *http_status = HttpStatusOf(s.code());
      return s;
    }
    return absl::OkStatus();
  }
  std::vector<BudgetReservation> sent_reservation;
  std::unique_ptr<char[]> sent(new char[static_cast<size_t>(length)]);
  if (absl::Status s = ReadGranted(conn, pipeline, length, sent.get(), &sent_reservation,
                                   state->account, http_status);
      !s.ok()) {
    return s;
  }
  std::vector<BudgetReservation> inflated_reservation;
  std::string inflated;
  absl::Status s = kserve::Inflate(
      *encoding, absl::string_view(sent.get(), static_cast<size_t>(length)),
      limits.max_message_bytes,
      [&](int64_t bytes) {
        return pipeline->ReserveWorkingMemory(bytes, &inflated_reservation.emplace_back(),
                                              state->account);
      },
      &inflated);
  sent.reset();
  sent_reservation.clear();
  if (!s.ok()) {
    *http_status = s.code() == absl::StatusCode::kInvalidArgument ? 400 : 413;
    if (absl::IsResourceExhausted(s) && !absl::StrContains(s.message(), "--max-message-bytes")) {
      *http_status = HttpStatusOf(s.code());  // the budget's refusal, not the limit's
    }
    return s;
  }
  const auto bytes = static_cast<int64_t>(inflated.size());
  if (s = AdmitBody(pipeline, bytes, /*body_held=*/false, state); !s.ok()) {
    *http_status = HttpStatusOf(s.code());
    return s;
  }
  std::copy(inflated.begin(), inflated.end(), state->body.get());
  return absl::OkStatus();
}

// Parses the body and binds it to model `op`.
absl::Status Bind(Pipeline* pipeline, const OpInfo& op, RestCallState* state) {
  const absl::string_view body(state->body.get(), static_cast<size_t>(state->received_bytes));
  auto parts = kserve::SplitBody(body, state->header_length != nullptr
                                           ? std::optional<absl::string_view>(state->header_length)
                                           : std::nullopt);
  if (!parts.ok()) return parts.status();
  if (absl::Status parsed = kserve::ParseInferRequestJson(
          op.QualifiedName(), *parts, pipeline->limits().tensor, &state->request);
      !parsed.ok()) {
    return parsed;
  }
  auto reserve = [pipeline, state](int64_t bytes) {
    return pipeline->ReserveWorkingMemory(bytes, &state->shm_copies.emplace_back(), state->account);
  };
  return kserve::BindInfer(op, pipeline->regions(*state), reserve, &state->request, state);
}

// Runs the call; this worker thread waits for the executor (the pool bounds the requests
// the binding serves). A call whose client has hung up by the time a worker would run it
// is not run (CANCELLED), as gRPC's cancelled calls are not. Checked (a poll of the
// socket) only for a call that waited: one run within a millisecond of its receipt, as
// small calls run inline, cannot have lost its client in between.
absl::Status Run(Pipeline* pipeline, RestCallState* state, Clock::time_point received,
                 HttpExchange* conn, Timing* timing) {
  absl::Notification done;
  absl::Status status;
  pipeline->ProcessCall(
      state, received, std::chrono::system_clock::time_point::max(),
      [conn, received] {
        if (Clock::now() - received < std::chrono::milliseconds(1)) return false;
        return conn->ClientHungUp();
      },
      [&](absl::Status s, const Timing& t) {
        status = std::move(s);
        *timing = t;
        done.Notify();  // last: the waiter's frame outlives this call
      });
  done.WaitForNotification();
  return status;
}

// The response of the finished call: its outputs, the JSON's memory granted by the
// budget first. Its binary parts are views of state->outputs and the call's results.
absl::StatusOr<kserve::RestInferResponse> Answer(Pipeline* pipeline, RestCallState* state) {
  auto outputs = kserve::InferOutputs(*state);
  if (!outputs.ok()) return outputs.status();
  state->outputs = *std::move(outputs);
  if (absl::Status granted =
          pipeline->ReserveWorkingMemory(kserve::JsonResponseBytes(state->request, state->outputs),
                                         &state->response_reservation, state->account);
      !granted.ok()) {
    return granted;
  }
  return kserve::EncodeInferResponseJson(state->op, state->request, state->outputs);
}

// Answers `response` compressed as `encoding` (the client's Accept-Encoding): the JSON and
// the binary parts as one body, Inference-Header-Content-Length the JSON's uncompressed
// size, as Triton answers. The copy and the compressed body are granted by the budget
// first; refused, the response goes uncompressed.
void RespondCompressed(HttpExchange* conn, Pipeline* pipeline, kserve::Encoding encoding,
                       const kserve::RestInferResponse& response,
                       const std::shared_ptr<ClientAccount>& account) {
  const int64_t plain = static_cast<int64_t>(response.json.size()) + response.binary_bytes;
  BudgetReservation held;
  if (!pipeline->ReserveWorkingMemory(plain + kserve::CompressBound(plain), &held, account).ok()) {
    if (response.binary.empty()) return Respond(conn, 200, response.json);
    return Respond(conn, 200, response.json, "application/octet-stream", response.binary,
                   response.binary_bytes,
                   absl::StrCat("Inference-Header-Content-Length: ", response.json.size(), "\r\n"));
  }
  std::string body = response.json;
  for (absl::string_view part : response.binary) body.append(part.data(), part.size());
  const std::string compressed = kserve::Compress(encoding, body);
  std::string headers = absl::StrCat("Content-Encoding: ", kserve::EncodingName(encoding), "\r\n");
  if (!response.binary.empty()) {
    absl::StrAppend(&headers, "Inference-Header-Content-Length: ", response.json.size(), "\r\n");
  }
  Respond(conn, 200, compressed,
          response.binary.empty() ? "application/json" : "application/octet-stream", {}, 0,
          headers);
}

}  // namespace

void KServeHttp::Infer(HttpExchange* conn, const std::string& model, const std::string& version,
                       const std::string& client) {
  const auto received = Clock::now();
  auto refuse = [&](int http_status, const absl::Status& status) {
    pipeline_->metrics().Record(infer_rpc_, status, {}, 0);
    RespondError(conn, http_status, status);
  };
  RestCallState state;
  state.client = client;
  state.account = pipeline_->AccountOf(client, conn->peer());
  int http_status = 0;
  if (absl::Status read = ReceiveBody(conn, pipeline_, &state, &http_status); !read.ok()) {
    return refuse(http_status, read);
  }
  const OpRegistry& registry = pipeline_->registry();
  auto index = kserve::FindModel(registry, model, version);
  if (!index.ok()) return refuse(HttpStatusOf(index.status().code()), index.status());
  if (absl::Status bound = Bind(pipeline_, registry.ops()[static_cast<size_t>(*index)], &state);
      !bound.ok()) {
    pipeline_->RecordModelFailure(*index, received);  // a refusal of a known model counts
    return refuse(HttpStatusOf(bound.code()), bound);
  }
  Timing timing;
  absl::Status status = Run(pipeline_, &state, received, conn, &timing);
  absl::StatusOr<kserve::RestInferResponse> response =
      status.ok() ? Answer(pipeline_, &state) : status;
  status = response.status();
  pipeline_->metrics().Record(infer_rpc_, status, timing,
                              static_cast<uint64_t>(state.call.input_bytes));
  if (!status.ok()) return RespondError(conn, status);
  const kserve::Encoding encoding = kserve::AcceptedEncoding(conn->header("Accept-Encoding"));
  if (encoding != kserve::Encoding::kIdentity) {
    return RespondCompressed(conn, pipeline_, encoding, *response, state.account);
  }
  if (response->binary.empty()) return Respond(conn, 200, response->json);
  Respond(conn, 200, response->json, "application/octet-stream", response->binary,
          response->binary_bytes,
          absl::StrCat("Inference-Header-Content-Length: ", response->json.size(), "\r\n"));
}

}  // namespace myops::server
