// myops-loadtest's Open Inference Protocol client (see kserve_client.h). Calls go through
// gRPC's generic stub on raw byte buffers, the blocking ones on a completion queue that
// the calling thread polls, exactly as the myops.v1 client's ScaleShiftInto /
// ScaleShiftAsync do, so that the comparison of the two protocols is not one of two call
// mechanisms.
#include "kserve_client.h"

#include <grpc/slice.h>
#include <grpcpp/client_context.h>
#include <grpcpp/completion_queue.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/client_callback.h>

#include <cstring>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "kserve/v2/grpc_predict_v2.pb.h"
#include "myops/wire/call_wire.h"
#include "myops/wire/slice_reader.h"
#include "unary_call.h"

namespace myops::loadtest {
namespace {

using inference::ModelInferRequest;
using inference::ModelInferResponse;
using myops::client::DType;

constexpr char kInferMethod[] = "/inference.GRPCInferenceService/ModelInfer";
constexpr char kReadyMethod[] = "/inference.GRPCInferenceService/ModelReady";

const char* Datatype(DType dtype) {
  switch (dtype) {
    case DType::kFloat64:
      return "FP64";
    case DType::kFloat16:
      return "FP16";
    case DType::kBFloat16:
      return "BF16";
    default:
      return "FP32";
  }
}

// A slice of `bytes` that keeps them alive while gRPC holds it.
grpc::Slice SliceOf(const std::shared_ptr<std::string>& bytes) {
  if (bytes->empty()) return grpc::Slice();
  auto* holder = new std::shared_ptr<std::string>(bytes);
  return grpc::Slice(
      grpc_slice_new_with_user_data(
          bytes->data(), bytes->size(),
          [](void* p) { delete static_cast<std::shared_ptr<std::string>*>(p); }, holder),
      grpc::Slice::STEAL_REF);
}

// ModelInferRequest{model_name, inputs: x (and alpha, beta), parameters,
// raw_input_contents: [data (, alpha, beta)]}, `data` referenced.
grpc::ByteBuffer EncodeRequest(const myops::client::TensorView& x, double alpha, double beta,
                               KServeScalars scalars, const grpc::Slice& data) {
  ModelInferRequest head;
  head.set_model_name(KServeClient::kModel);
  auto* in = head.add_inputs();
  in->set_name("x");
  in->set_datatype(Datatype(x.dtype));
  for (int64_t d : x.shape) in->add_shape(d);
  if (scalars == KServeScalars::kParameters) {
    (*head.mutable_parameters())["alpha"].set_double_param(alpha);
    (*head.mutable_parameters())["beta"].set_double_param(beta);
  } else {
    for (const char* name : {"alpha", "beta"}) {
      auto* scalar = head.add_inputs();
      scalar->set_name(name);
      scalar->set_datatype("FP64");
      scalar->add_shape(1);
    }
  }
  wire::MessageWriter writer;
  writer.AppendBytes(head.SerializeAsString());
  constexpr int kRaw = ModelInferRequest::kRawInputContentsFieldNumber;
  writer.AppendData(kRaw, data);
  if (scalars == KServeScalars::kInputs) {
    writer.AppendData(kRaw, grpc::Slice(&alpha, sizeof alpha));
    writer.AppendData(kRaw, grpc::Slice(&beta, sizeof beta));
  }
  return writer.Finish();
}

// Checks that `bytes` is a ModelInferResponse with one output of `expected` raw bytes and
// copies them into `out` (when not null). Only the small fields are parsed by protobuf.
absl::Status DecodeResponse(const grpc::ByteBuffer& bytes, size_t expected, void* out) {
  namespace d = wire::detail;
  std::vector<grpc::Slice> slices;
  if (!bytes.Dump(&slices).ok()) return absl::InternalError("unreadable ModelInferResponse");
  d::SliceReader in(slices);
  std::string head;
  std::vector<d::Span> data;
  int raw_outputs = 0;
  uint64_t raw_bytes = 0;
  const absl::Status malformed = absl::InternalError("malformed ModelInferResponse");
  while (in.remaining() > 0) {
    uint64_t key = 0;
    if (!d::ReadKey(in, &key)) return malformed;
    if ((key >> 3) == ModelInferResponse::kRawOutputContentsFieldNumber &&
        (key & 7) == d::kLengthDelimited) {
      uint64_t n = 0;
      if (!in.ReadLength(&n) || !in.Skip(n, nullptr, raw_outputs == 0 ? &data : nullptr)) {
        return malformed;
      }
      raw_bytes = raw_outputs++ == 0 ? n : raw_bytes;
      continue;
    }
    wire::AppendVarint(key, &head);
    if (d::CopyValue(in, key, &head, size_t{1} << 20) != d::Copied::kOk) return malformed;
  }
  ModelInferResponse response;
  if (!response.ParseFromString(head)) return malformed;
  if (response.outputs_size() != 1 || raw_outputs != 1 || raw_bytes != expected) {
    return absl::InternalError(absl::StrCat(
        "the response has ", response.outputs_size(), " outputs and ", raw_outputs,
        " raw contents (", raw_bytes, " bytes); expected one of ", expected, " bytes"));
  }
  if (out != nullptr) {
    auto* to = static_cast<uint8_t*>(out);
    for (const d::Span& s : data) {
      std::memcpy(to, s.first, s.second);
      to += s.second;
    }
  }
  return absl::OkStatus();
}

absl::Status ToAbsl(const grpc::Status& s) {
  if (s.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
}

}  // namespace

struct KServeClient::Impl {
  KServeOptions options;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<grpc::GenericStub> stub;
  std::string authorization;

  void Prepare(grpc::ClientContext* context, std::chrono::milliseconds deadline) const {
    context->set_deadline(std::chrono::system_clock::now() + deadline);
    if (!authorization.empty()) context->AddMetadata("authorization", authorization);
  }
};

KServeClient::KServeClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
KServeClient::~KServeClient() = default;

absl::StatusOr<std::unique_ptr<KServeClient>> KServeClient::Create(const KServeOptions& options) {
  grpc::ChannelArguments args;
  args.SetMaxSendMessageSize(options.max_message_bytes);
  args.SetMaxReceiveMessageSize(options.max_message_bytes);
  args.SetInt("grpc.channel_id", options.channel_id);
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->channel =
      grpc::CreateCustomChannel(options.target, grpc::InsecureChannelCredentials(), args);
  if (impl->channel == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("could not create a channel to \"", options.target, "\""));
  }
  impl->stub = std::make_unique<grpc::GenericStub>(impl->channel);
  if (!options.auth_token.empty()) impl->authorization = "Bearer " + options.auth_token;
  return std::unique_ptr<KServeClient>(new KServeClient(std::move(impl)));
}

absl::Status KServeClient::CheckReady(std::chrono::milliseconds deadline) {
  inference::ModelReadyRequest request;
  request.set_name(kModel);
  const std::string bytes = request.SerializeAsString();
  grpc::Slice slice(bytes);
  const grpc::ByteBuffer request_buffer(&slice, 1);
  grpc::ByteBuffer response_buffer;
  grpc::ClientContext context;
  impl_->Prepare(&context, deadline);
  const grpc::Status status = client::internal::BlockingUnaryCall(
      *impl_->stub, &context, kReadyMethod, request_buffer, &response_buffer);
  if (!status.ok()) return ToAbsl(status);
  std::string flat;
  if (!wire::Flatten(response_buffer, &flat)) return absl::InternalError("unreadable response");
  inference::ModelReadyResponse response;
  if (!response.ParseFromString(flat) || !response.ready()) {
    return absl::FailedPreconditionError(
        absl::StrCat("model ", kModel, " is not ready on ", impl_->options.target));
  }
  return absl::OkStatus();
}

// `x`'s bytes copied into `buffer`, reused unless gRPC still holds the last request's
// slice; returns the slice of them a request sends.
grpc::Slice Fill(const myops::client::TensorView& x, KServeClient::SendBuffer* buffer) {
  if (buffer->bytes == nullptr || buffer->bytes.use_count() > 1 ||
      buffer->bytes->size() != x.size_bytes) {
    buffer->bytes = std::make_shared<std::string>(x.size_bytes, '\0');
  }
  if (x.size_bytes != 0) std::memcpy(buffer->bytes->data(), x.data, x.size_bytes);
  return SliceOf(buffer->bytes);
}

absl::Status KServeClient::Infer(const myops::client::TensorView& x, double alpha, double beta,
                                 const myops::client::MutableTensorView& out, SendBuffer* buffer,
                                 std::chrono::milliseconds deadline) {
  const grpc::ByteBuffer request =
      EncodeRequest(x, alpha, beta, impl_->options.scalars, Fill(x, buffer));
  grpc::ByteBuffer response;
  grpc::ClientContext context;
  impl_->Prepare(&context, deadline);
  const grpc::Status status =
      client::internal::BlockingUnaryCall(*impl_->stub, &context, kInferMethod, request, &response);
  if (!status.ok()) return ToAbsl(status);
  return DecodeResponse(response, out.size_bytes, out.data);
}

void KServeClient::InferAsync(const myops::client::TensorView& x, double alpha, double beta,
                              SendBuffer* buffer, std::function<void(absl::Status)> done,
                              std::chrono::milliseconds deadline) {
  // One call's messages and context, freed by its callback.
  struct Call {
    grpc::ClientContext context;
    grpc::ByteBuffer request, response;
    size_t expected = 0;
    std::function<void(absl::Status)> done;
  };
  SendBuffer own;
  auto* call = new Call;
  call->request =
      EncodeRequest(x, alpha, beta, impl_->options.scalars, Fill(x, buffer ? buffer : &own));
  call->expected = x.size_bytes;
  call->done = std::move(done);
  impl_->Prepare(&call->context, deadline);
  impl_->stub->UnaryCall(&call->context, kInferMethod, grpc::StubOptions(), &call->request,
                         &call->response, [call](grpc::Status status) {
                           absl::Status result =
                               status.ok() ? DecodeResponse(call->response, call->expected, nullptr)
                                           : ToAbsl(status);
                           auto finish = std::move(call->done);
                           delete call;
                           finish(std::move(result));
                         });
}

}  // namespace myops::loadtest
