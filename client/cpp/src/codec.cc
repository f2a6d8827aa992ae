// Conversion between plain client types and myops.v1 messages (see codec.h).
#include "codec.h"

#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "grpc_status.h"

namespace myops::client::internal {
namespace {

namespace v1 = ::myops::v1;

// The output tensor as a view of the response's bytes, checked for self-consistency and,
// when `expected` is non-null, against the expected dtype and shape.
absl::StatusOr<TensorView> OutputView(const v1::Tensor& output, const TensorView* expected) {
  TensorView view{static_cast<DType>(output.dtype()),
                  std::vector<int64_t>(output.shape().begin(), output.shape().end()),
                  output.data().data(), output.data().size()};
  if (absl::Status status = ValidateTensorView(view, "server response output"); !status.ok()) {
    return absl::InternalError(status.message());
  }
  if (expected != nullptr && (view.dtype != expected->dtype || view.shape != expected->shape)) {
    return absl::InternalError(absl::StrCat("server returned a ", DTypeName(view.dtype),
                                            " tensor of shape ", ShapeToString(view.shape),
                                            "; expected ", DTypeName(expected->dtype), " of shape ",
                                            ShapeToString(expected->shape), " (the input's)"));
  }
  return view;
}

}  // namespace

absl::Status ValidateInput(const TensorView& input, int max_message_bytes) {
  if (absl::Status status = ValidateTensorView(input, "input"); !status.ok()) return status;
  if (input.size_bytes > static_cast<size_t>(max_message_bytes)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "input: ", input.size_bytes, " bytes exceed the client's max_message_bytes (",
        max_message_bytes, "); expected at most that (ClientOptions::max_message_bytes)"));
  }
  return absl::OkStatus();
}

void EncodeRequest(const TensorView& input, double alpha, double beta, const std::string& device,
                   uint64_t request_id, v1::ScaleShiftRequest* request) {
  v1::Tensor* tensor = request->mutable_input();
  tensor->set_dtype(static_cast<v1::DType>(input.dtype));
  tensor->mutable_shape()->Assign(input.shape.begin(), input.shape.end());
  // assign() reuses the string's capacity when the request message is reused.
  if (input.size_bytes == 0) {
    tensor->mutable_data()->clear();
  } else {
    tensor->mutable_data()->assign(static_cast<const char*>(input.data), input.size_bytes);
  }
  request->set_alpha(alpha);
  request->set_beta(beta);
  request->set_device(device);
  request->set_request_id(request_id);
}

Timing DecodeTiming(const v1::Timing& timing) {
  return Timing{timing.decode_ns(), timing.queue_ns(), timing.compute_ns(),
                timing.encode_ns(), timing.total_ns(), timing.device()};
}

absl::StatusOr<ScaleShiftResult> TakeResult(v1::ScaleShiftResponse* response,
                                            const TensorView* expected) {
  absl::StatusOr<TensorView> view = OutputView(response->output(), expected);
  if (!view.ok()) return view.status();
  ScaleShiftResult result;
  std::string bytes;
  bytes.swap(*response->mutable_output()->mutable_data());  // No copy on a heap message.
  result.output = Tensor(view->dtype, std::move(view->shape), std::move(bytes));
  result.timing = DecodeTiming(response->timing());
  return result;
}

absl::Status CopyOutput(const v1::ScaleShiftResponse& response, const MutableTensorView& out) {
  absl::StatusOr<TensorView> view = OutputView(response.output(), nullptr);
  if (!view.ok()) return view.status();
  if (view->dtype != out.dtype || view->shape != out.shape) {
    return absl::InternalError(absl::StrCat("server returned a ", DTypeName(view->dtype),
                                            " tensor of shape ", ShapeToString(view->shape),
                                            "; expected ", DTypeName(out.dtype), " of shape ",
                                            ShapeToString(out.shape), " (the output buffer's)"));
  }
  if (view->size_bytes != 0) std::memcpy(out.data, view->data, view->size_bytes);
  return absl::OkStatus();
}

StreamResult TakeStreamResult(v1::ScaleShiftStreamResponse* response) {
  StreamResult result;
  result.request_id = response->request_id();
  switch (response->result_case()) {
    case v1::ScaleShiftStreamResponse::kResponse:
      result.result = TakeResult(response->mutable_response(), nullptr);
      break;
    case v1::ScaleShiftStreamResponse::kError: {
      const v1::Error& error = response->error();
      absl::Status status = ToAbslStatus(error.code(), error.message());
      // A stream error must be an error; code 0 (OK) would be a server bug.
      result.result =
          status.ok()
              ? absl::InternalError(absl::StrCat("server sent an error with code OK for request ",
                                                 result.request_id, ": ", error.message()))
              : status;
      break;
    }
    case v1::ScaleShiftStreamResponse::RESULT_NOT_SET:
      result.result = absl::InternalError(absl::StrCat(
          "server sent a stream response without result or error for request ", result.request_id));
      break;
  }
  return result;
}

ServerInfo DecodeServerInfo(const v1::ServerInfoResponse& response) {
  ServerInfo info;
  info.myops_version = response.myops_version();
  info.torch_version = response.torch_version();
  info.cuda_version = response.cuda_version();
  for (const v1::Device& device : response.devices()) {
    info.devices.push_back({device.name(), device.description(), device.total_memory_bytes()});
  }
  for (const v1::Operator& op : response.operators()) {
    info.operators.push_back({op.name(), op.schema()});
  }
  info.limits = {response.limits().max_message_bytes(), response.limits().max_elements(),
                 response.limits().max_inflight()};
  info.workers = response.workers();
  return info;
}

}  // namespace myops::client::internal
