// Conversion between plain client types and myops.v1 messages (see codec.h).
#include "codec.h"

#include <cstring>
#include <utility>
#include <vector>

#include <google/protobuf/io/coded_stream.h>

#include "absl/strings/str_cat.h"
#include "grpc_status.h"
#include "myops/wire/tensor_wire.h"

namespace myops::client::internal {
namespace {

namespace v1 = ::myops::v1;

// The output tensor's dtype and shape with `data`/`size` as its bytes, checked for
// self-consistency and, when `expected` is non-null, against the expected dtype and shape.
absl::StatusOr<TensorView> OutputView(const v1::Tensor& output, const void* data, size_t size,
                                      const TensorView* expected) {
  TensorView view{static_cast<DType>(output.dtype()),
                  std::vector<int64_t>(output.shape().begin(), output.shape().end()), data, size};
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

// A unary response: its fields but the output's data, and that data in the received slices.
struct ParsedResponse {
  v1::ScaleShiftResponse fields;
  wire::TensorData data;
};

absl::Status ParseResponse(const grpc::ByteBuffer& bytes, ParsedResponse* response) {
  constexpr int kOutputField = v1::ScaleShiftResponse::kOutputFieldNumber;
  if (absl::Status status =
          wire::ParseWithTensorData(bytes, kOutputField, &response->fields, &response->data);
      !status.ok()) {
    return absl::InternalError(absl::StrCat("the server's response: ", status.message()));
  }
  return absl::OkStatus();
}

// The parsed output as a view: its bytes' first span stands in for the data (the bytes
// are copied out of all spans by the caller).
absl::StatusOr<TensorView> ParsedOutputView(const ParsedResponse& response,
                                            const TensorView* expected) {
  static const uint8_t kAnyBytes = 0;  // Non-null: ValidateTensorView wants a buffer.
  return OutputView(response.fields.output(), &kAnyBytes, response.data.size(), expected);
}

}  // namespace

uint64_t EncodedRequestSize(const TensorView& input, double alpha, double beta,
                            const std::string& device, uint64_t request_id) {
  using google::protobuf::io::CodedOutputStream;
  v1::Tensor head;
  head.set_dtype(static_cast<v1::DType>(input.dtype));
  head.mutable_shape()->Assign(input.shape.begin(), input.shape.end());
  v1::ScaleShiftRequest rest;
  rest.set_alpha(alpha);
  rest.set_beta(beta);
  rest.set_device(device);
  rest.set_request_id(request_id);
  const uint64_t n = input.size_bytes;
  // The data field's one-byte key, its length and its bytes (written even when empty by
  // the unary encoder), inside the input field's key and length.
  const uint64_t tensor = head.ByteSizeLong() + 1 + CodedOutputStream::VarintSize64(n) + n;
  return rest.ByteSizeLong() + 1 + CodedOutputStream::VarintSize64(tensor) + tensor;
}

absl::Status ValidateRequest(const TensorView& input, double alpha, double beta,
                             const std::string& device, uint64_t request_id,
                             int max_message_bytes) {
  if (absl::Status status = ValidateTensorView(input, "input"); !status.ok()) return status;
  const auto over = [&](auto&&... what) {
    return absl::InvalidArgumentError(absl::StrCat(
        "input: ", what..., " exceed the client's max_message_bytes (", max_message_bytes,
        "); expected at most that (ClientOptions::max_message_bytes)"));
  };
  if (input.size_bytes > static_cast<size_t>(max_message_bytes)) {
    return over(input.size_bytes, " bytes");
  }
  const uint64_t size = EncodedRequestSize(input, alpha, beta, device, request_id);
  if (size > static_cast<uint64_t>(max_message_bytes)) {
    return over(size, " bytes of encoded request (", input.size_bytes,
                " bytes of tensor data plus its dtype, shape and the call's other fields)");
  }
  return absl::OkStatus();
}

grpc::ByteBuffer EncodeRequestBytes(const TensorView& input, double alpha, double beta,
                                    const std::string& device, SendBufferPool& pool) {
  v1::Tensor head;
  head.set_dtype(static_cast<v1::DType>(input.dtype));
  head.mutable_shape()->Assign(input.shape.begin(), input.shape.end());
  grpc::Slice data = pool.Acquire(input.size_bytes);
  if (input.size_bytes != 0) {
    std::memcpy(const_cast<uint8_t*>(data.begin()), input.data, input.size_bytes);  // Ours.
  }
  v1::ScaleShiftRequest rest;
  rest.set_alpha(alpha);
  rest.set_beta(beta);
  rest.set_device(device);
  return wire::EncodeWithTensorData(v1::ScaleShiftRequest::kInputFieldNumber, head, data, rest);
}

absl::StatusOr<ScaleShiftResult> DecodeResponseBytes(const grpc::ByteBuffer& bytes,
                                                     const TensorView* expected) {
  ParsedResponse response;
  if (absl::Status status = ParseResponse(bytes, &response); !status.ok()) return status;
  absl::StatusOr<TensorView> view = ParsedOutputView(response, expected);
  if (!view.ok()) return view.status();
  std::string data;
  response.data.AppendTo(&data);
  ScaleShiftResult result;
  result.output = Tensor(view->dtype, std::move(view->shape), std::move(data));
  result.timing = DecodeTiming(response.fields.timing());
  return result;
}

absl::StatusOr<Timing> DecodeResponseBytesInto(const grpc::ByteBuffer& bytes,
                                               const MutableTensorView& out) {
  ParsedResponse response;
  if (absl::Status status = ParseResponse(bytes, &response); !status.ok()) return status;
  absl::StatusOr<TensorView> view = ParsedOutputView(response, nullptr);
  if (!view.ok()) return view.status();
  if (view->dtype != out.dtype || view->shape != out.shape) {
    return absl::InternalError(absl::StrCat("server returned a ", DTypeName(view->dtype),
                                            " tensor of shape ", ShapeToString(view->shape),
                                            "; expected ", DTypeName(out.dtype), " of shape ",
                                            ShapeToString(out.shape), " (the output buffer's)"));
  }
  response.data.CopyTo(out.data);
  return DecodeTiming(response.fields.timing());
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
  Timing decoded;
  decoded.decode_ns = timing.decode_ns();
  decoded.queue_ns = timing.queue_ns();
  decoded.compute_ns = timing.compute_ns();
  decoded.encode_ns = timing.encode_ns();
  decoded.total_ns = timing.total_ns();
  decoded.device = timing.device();
  return decoded;  // The replica comes from the call's metadata, not the message.
}

absl::StatusOr<ScaleShiftResult> TakeResult(v1::ScaleShiftResponse* response,
                                            const TensorView* expected) {
  const std::string& data = response->output().data();
  absl::StatusOr<TensorView> view =
      OutputView(response->output(), data.data(), data.size(), expected);
  if (!view.ok()) return view.status();
  ScaleShiftResult result;
  std::string bytes;
  bytes.swap(*response->mutable_output()->mutable_data());  // No copy on a heap message.
  result.output = Tensor(view->dtype, std::move(view->shape), std::move(bytes));
  result.timing = DecodeTiming(response->timing());
  return result;
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
