// The HTTP/REST binding's inference, POST /v2/models/{model}[/versions/{v}]/infer: the
// body read within the memory budget, bound to its model as the gRPC binding's requests
// are (frontends/oip/binding.h), run on the pipeline while this worker waits, and
// answered as JSON (with the binary tensor data extension).
#include <civetweb.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "frontends/oip/binding.h"
#include "frontends/oip/codec.h"
#include "frontends/oip/rest/json.h"
#include "frontends/oip/rest/respond.h"
#include "frontends/oip/rest/service.h"
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
};

// Reads the request's body into `state` once the budget has granted it and its parsed
// JSON. 411 without a Content-Length, 413 over --max-message-bytes, the budget's refusal,
// 400 when the client stops sending: `*http_status` says which.
absl::Status ReceiveBody(mg_connection* conn, Pipeline* pipeline, RestCallState* state,
                         int* http_status) {
  const int64_t length = mg_get_request_info(conn)->content_length;
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
  state->header_length = mg_get_header(conn, "Inference-Header-Content-Length");
  // The JSON part's size as the header claims (checked once the body is read).
  int64_t json_bytes = length;
  if (state->header_length != nullptr) {
    json_bytes = std::min<int64_t>(length, std::strtoll(state->header_length, nullptr, 10));
    if (json_bytes < 0) json_bytes = length;
  }
  // Held while parsed: the body, aligned copies of its binary part (at most the part
  // again), and the parsed JSON.
  absl::Status status = pipeline->ReserveCallRequest(
      length, length + (length - json_bytes) + json_bytes * kserve::kJsonBytesPerByte, state);
  if (!status.ok()) {
    *http_status = HttpStatusOf(status.code());
    return status;
  }
  state->body.reset(new char[static_cast<size_t>(length)]);
  *http_status = 400;
  return ReadBody(conn, length, state->body.get());
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
    return pipeline->ReserveWorkingMemory(bytes, &state->shm_copies.emplace_back());
  };
  return kserve::BindInfer(op, pipeline->shared_memory(), reserve, &state->request, state);
}

// Runs the call; this worker thread waits for the executor (the pool bounds the requests
// the binding serves).
absl::Status Run(Pipeline* pipeline, RestCallState* state, Clock::time_point received,
                 Timing* timing) {
  absl::Notification done;
  absl::Status status;
  pipeline->ProcessCall(
      state, received, std::chrono::system_clock::time_point::max(), [] { return false; },
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
  if (absl::Status granted = pipeline->ReserveWorkingMemory(
          kserve::JsonResponseBytes(state->request, state->outputs), &state->response_reservation);
      !granted.ok()) {
    return granted;
  }
  return kserve::EncodeInferResponseJson(state->op, state->request, state->outputs);
}

}  // namespace

void KServeHttp::Infer(mg_connection* conn, const std::string& model, const std::string& version) {
  const auto received = Clock::now();
  auto refuse = [&](int http_status, const absl::Status& status) {
    pipeline_->metrics().Record(infer_rpc_, status, {}, 0);
    RespondError(conn, http_status, status);
  };
  RestCallState state;
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
  absl::Status status = Run(pipeline_, &state, received, &timing);
  absl::StatusOr<kserve::RestInferResponse> response =
      status.ok() ? Answer(pipeline_, &state) : status;
  status = response.status();
  pipeline_->metrics().Record(infer_rpc_, status, timing,
                              static_cast<uint64_t>(state.call.input_bytes));
  if (!status.ok()) return RespondError(conn, status);
  if (response->binary.empty()) return Respond(conn, 200, response->json);
  Respond(conn, 200, response->json, "application/octet-stream", response->binary,
          response->binary_bytes,
          absl::StrCat("Inference-Header-Content-Length: ", response->json.size(), "\r\n"));
}

}  // namespace myops::server
