// Client: unary and streaming ScaleShift, ServerInfo and Health over one channel (see
// myops/client/client.h; the asynchronous calls are in client_async.cc).
#include "myops/client/client.h"

#include <memory>
#include <string>
#include <utility>

#include <grpcpp/client_context.h>
#include <grpcpp/support/byte_buffer.h>

#include "absl/strings/str_cat.h"
#include "client_core.h"
#include "codec.h"
#include "grpc_status.h"
#include "health.h"
#include "retry.h"
#include "shm_call.h"
#include "stream_session_impl.h"
#include "unary_call.h"

namespace myops::client {
namespace {

namespace v1 = ::myops::v1;
using internal::Clock;

// The blocking raw unary ScaleShift of a validated `x`, with retries: the response's
// wire bytes into `response` and the replica that served it into `replica`, or the call's
// failure.
absl::Status CallScaleShift(const internal::ClientCore& core, const TensorView& x, double alpha,
                            double beta, const CallOptions& options, grpc::ByteBuffer* response,
                            std::string* replica) {
  const grpc::ByteBuffer request =
      internal::EncodeRequestBytes(x, alpha, beta, options.device, *core.send_buffers);
  return internal::ToAbslStatus(internal::CallWithRetries(
      core.options.retry, internal::CallDeadline(core.options, options),
      [&](grpc::ClientContext* context) {
        core.Authorize(context);
        response->Clear();
        grpc::Status status = internal::BlockingUnaryCall(
            *core.generic_stub, context, internal::kScaleShiftMethod, request, response);
        *replica = internal::ServingReplica(*context);
        return status;
      }));
}

// Validates x alone when it may go to shared memory (`shared`, internal::MayShare), the
// message limit not applying to it; otherwise the whole request.
absl::Status ValidateInput(const internal::ClientCore& core, const TensorView& x, double alpha,
                           double beta, const CallOptions& options, bool shared) {
  if (shared) return ValidateTensorView(x, "input");
  return internal::ValidateRequest(x, alpha, beta, options.device, 0,
                                   core.options.max_message_bytes);
}

// scale_shift as a Call with x (MayShare, validated) in shared memory
// (ClientOptions::shared_memory), `read` taking the response: absl::Status(const grpc::ByteBuffer&,
// const std::shared_ptr<ShmCall>&, std::string replica). False when x does not go to shared memory:
// the raw ScaleShift RPC then.
template <typename Read>
absl::StatusOr<bool> ViaSharedMemory(const internal::ClientCore& core, const TensorView& x,
                                     double alpha, double beta, const CallOptions& options,
                                     Read read) {
  const Value args[] = {x, alpha, beta};
  internal::CallFields call{"myops::scale_shift", args, {}, options.device, 0};
  for (int placements = 1;; ++placements) {
    absl::StatusOr<std::shared_ptr<internal::ShmCall>> placed =
        internal::PlaceCall(core.shm.get(), call, x.size_bytes);
    if (!placed.ok()) return placed.status();
    if (*placed == nullptr) return false;
    std::shared_ptr<internal::ShmCall> shm = *std::move(placed);
    call.placement = &shm->placement;
    grpc::ByteBuffer response;
    std::string replica;
    absl::Status status = internal::CallRaw(core, call, options, &response, &replica);
    if (!status.ok()) {
      // Once more with new regions when the server lost this client's (it restarted).
      if (placements == 1 && internal::ForgetIfUnknownRegion(core.shm.get(), shm.get(), status)) {
        continue;
      }
      return status;
    }
    if (absl::Status read_status = read(response, shm, std::move(replica)); !read_status.ok()) {
      return read_status;
    }
    return true;
  }
}

absl::Status CheckOutputBuffer(const TensorView& x, const MutableTensorView& out) {
  if (out.dtype != x.dtype || out.shape != x.shape) {
    return absl::InvalidArgumentError(
        absl::StrCat("out: ", DTypeName(out.dtype), " of shape ", ShapeToString(out.shape),
                     " does not match the input; expected the input's dtype and shape (",
                     DTypeName(x.dtype), " of shape ", ShapeToString(x.shape), ")"));
  }
  if (out.size_bytes != x.size_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("out: size_bytes is ", out.size_bytes,
                                                   "; expected ", x.size_bytes,
                                                   " (the input's dtype and shape)"));
  }
  if (out.data == nullptr && out.size_bytes != 0) {
    return absl::InvalidArgumentError(absl::StrCat("out: data is null but size_bytes is ",
                                                   out.size_bytes, "; expected a buffer"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Client>> Client::Create(ClientOptions options) {
  absl::StatusOr<std::shared_ptr<internal::ClientCore>> core =
      internal::CreateClientCore(std::move(options));
  if (!core.ok()) return core.status();
  return std::unique_ptr<Client>(new Client(*std::move(core)));
}

Client::Client(std::shared_ptr<internal::ClientCore> core) : core_(std::move(core)) {}

Client::~Client() = default;

const ClientOptions& Client::options() const { return core_->options; }

absl::StatusOr<ScaleShiftResult> Client::ScaleShift(const TensorView& x, double alpha, double beta,
                                                    const CallOptions& options) {
  const bool shared = internal::MayShare(core_->shm.get(), x);
  if (absl::Status status = ValidateInput(*core_, x, alpha, beta, options, shared); !status.ok()) {
    return status;
  }
  ScaleShiftResult shm_result;
  absl::StatusOr<bool> shm =
      !shared ? false
              : ViaSharedMemory(
                    *core_, x, alpha, beta, options,
                    [&](const grpc::ByteBuffer& response,
                        const std::shared_ptr<internal::ShmCall>& call, std::string replica) {
                      absl::StatusOr<ScaleShiftResult> y = internal::DecodeScaleShift(
                          response, call, x, options.results_in_shared_memory);
                      if (!y.ok()) return y.status();
                      shm_result = *std::move(y);
                      shm_result.timing.replica = std::move(replica);
                      return absl::OkStatus();
                    });
  if (!shm.ok()) return shm.status();
  if (*shm) return shm_result;
  if (shared) {  // the pool had no room: inline after all, within the message limit
    if (absl::Status status = ValidateInput(*core_, x, alpha, beta, options, false); !status.ok()) {
      return status;
    }
  }
  grpc::ByteBuffer response;
  std::string replica;
  if (absl::Status status = CallScaleShift(*core_, x, alpha, beta, options, &response, &replica);
      !status.ok()) {
    return status;
  }
  absl::StatusOr<ScaleShiftResult> result = internal::DecodeResponseBytes(response, &x);
  if (result.ok()) result->timing.replica = std::move(replica);
  return result;
}

absl::StatusOr<Timing> Client::ScaleShiftInto(const TensorView& x, double alpha, double beta,
                                              const MutableTensorView& out,
                                              const CallOptions& options) {
  const bool shared = internal::MayShare(core_->shm.get(), x);
  if (absl::Status status = ValidateInput(*core_, x, alpha, beta, options, shared); !status.ok()) {
    return status;
  }
  if (absl::Status status = CheckOutputBuffer(x, out); !status.ok()) return status;
  Timing shm_timing;
  absl::StatusOr<bool> shm =
      !shared ? false
              : ViaSharedMemory(
                    *core_, x, alpha, beta, options,
                    [&](const grpc::ByteBuffer& response,
                        const std::shared_ptr<internal::ShmCall>& call, std::string replica) {
                      absl::StatusOr<Timing> timing =
                          internal::DecodeScaleShiftInto(response, *call, x, out);
                      if (!timing.ok()) return timing.status();
                      shm_timing = *std::move(timing);
                      shm_timing.replica = std::move(replica);
                      return absl::OkStatus();
                    });
  if (!shm.ok()) return shm.status();
  if (*shm) return shm_timing;
  if (shared) {  // the pool had no room: inline after all, within the message limit
    if (absl::Status status = ValidateInput(*core_, x, alpha, beta, options, false); !status.ok()) {
      return status;
    }
  }
  grpc::ByteBuffer response;
  std::string replica;
  if (absl::Status status = CallScaleShift(*core_, x, alpha, beta, options, &response, &replica);
      !status.ok()) {
    return status;
  }
  absl::StatusOr<Timing> timing = internal::DecodeResponseBytesInto(response, out);
  if (timing.ok()) timing->replica = std::move(replica);
  return timing;
}

absl::StatusOr<std::unique_ptr<StreamSession>> Client::OpenStream(const CallOptions& options) {
  return std::unique_ptr<StreamSession>(
      new StreamSession(std::make_unique<StreamSession::Impl>(core_, options)));
}

absl::StatusOr<ServerInfo> Client::GetServerInfo(const CallOptions& options) {
  v1::ServerInfoResponse response;
  grpc::Status status = internal::CallWithRetries(
      core_->options.retry, internal::CallDeadline(core_->options, options),
      [&](grpc::ClientContext* context) {
        core_->Authorize(context);
        response.Clear();
        return core_->stub->ServerInfo(context, v1::ServerInfoRequest(), &response);
      });
  if (!status.ok()) return internal::ToAbslStatus(status);
  return internal::DecodeServerInfo(response);
}

absl::StatusOr<bool> Client::Health(const std::string& service, const CallOptions& options) {
  const grpc::ByteBuffer request = internal::EncodeHealthCheckRequest(service);
  grpc::ByteBuffer response;
  grpc::Status status = internal::CallWithRetries(
      core_->options.retry, internal::CallDeadline(core_->options, options),
      [&](grpc::ClientContext* context) {
        core_->Authorize(context);
        response.Clear();
        return internal::BlockingUnaryCall(*core_->generic_stub, context,
                                           internal::kHealthCheckMethod, request, &response);
      });
  if (!status.ok()) return internal::ToAbslStatus(status);
  absl::StatusOr<internal::ServingStatus> serving = internal::DecodeHealthCheckResponse(response);
  if (!serving.ok()) return serving.status();
  return *serving == internal::ServingStatus::kServing;
}

}  // namespace myops::client
