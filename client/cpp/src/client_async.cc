// Client's asynchronous calls (ScaleShiftAsync, CallAsync, ListOperatorsAsync,
// GetServerInfoAsync, HealthAsync) and their cancellation handle AsyncCall (see
// myops/client/client.h). All run through StartAsyncUnary (async_call.h); the protobuf
// messages of ListOperators and ServerInfo are (de)serialized here by the generated code.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <grpcpp/impl/codegen/proto_utils.h>
#include <grpcpp/support/byte_buffer.h>

#include "absl/strings/str_cat.h"
#include "async_call.h"
#include "call_codec.h"
#include "client_core.h"
#include "codec.h"
#include "grpc_status.h"
#include "health.h"
#include "myops/client/client.h"
#include "retry.h"
#include "shm_call.h"

namespace myops::client {
namespace {

// The wire bytes of a request message.
template <typename Message>
grpc::ByteBuffer SerializeMessage(const Message& message) {
  grpc::ByteBuffer bytes;
  bool own_buffer = false;
  grpc::Status status = grpc::SerializationTraits<Message>::Serialize(message, &bytes, &own_buffer);
  (void)status;  // Serializing a message held in memory cannot fail.
  return bytes;
}

// The response message of a finished raw call; the call's error, or InternalError when
// the bytes are not a `Message`.
template <typename Message>
absl::StatusOr<Message> ParseResponse(const grpc::Status& status, grpc::ByteBuffer& bytes) {
  if (!status.ok()) return internal::ToAbslStatus(status);
  Message message;
  grpc::Status parsed = grpc::SerializationTraits<Message>::Deserialize(&bytes, &message);
  if (!parsed.ok()) {
    return absl::InternalError(absl::StrCat("malformed ", Message::descriptor()->name(),
                                            " from the server: ", parsed.error_message()));
  }
  return message;
}

// Starts the raw Call of `call` (validated first), `done` taking its status, response and
// replica; null when `call` is invalid (`done` has run). Keeps `shm` (the call's region)
// until `done` has run.
using CallDone = std::function<void(absl::Status, const grpc::ByteBuffer&, std::string)>;
std::shared_ptr<internal::AsyncCallState> StartCall(
    const std::shared_ptr<internal::ClientCore>& core_, const internal::CallFields& call,
    const CallOptions& options, CallDone done, std::shared_ptr<internal::ShmCall> shm) {
  if (absl::Status status = internal::ValidateCall(call, core_->options.max_message_bytes);
      !status.ok()) {
    done(std::move(status), grpc::ByteBuffer(), "");
    return nullptr;
  }
  return internal::StartAsyncUnary(
      core_, internal::kCallMethod, internal::EncodeCallRequest(call, *core_->send_buffers),
      internal::CallDeadline(core_->options, options),
      [done = std::move(done), shm = std::move(shm), pool = std::weak_ptr(core_->shm)](
          grpc::Status status, grpc::ByteBuffer response, std::string replica) {
        absl::Status result = internal::ToAbslStatus(status);
        if (!result.ok()) {
          // The next call registers new regions when the server lost this client's (it
          // restarted); this one fails, its arguments are gone.
          if (std::shared_ptr<internal::ShmPool> p = pool.lock()) {
            internal::ForgetIfUnknownRegion(p.get(), shm.get(), result);
          }
        }
        done(std::move(result), response, std::move(replica));
      });
}

}  // namespace

AsyncCall::AsyncCall(std::shared_ptr<internal::AsyncCallState> state) : state_(std::move(state)) {}

void AsyncCall::Cancel() const {
  if (state_ != nullptr) state_->Cancel();
}

AsyncCall Client::ScaleShiftAsync(const TensorView& x, double alpha, double beta,
                                  ScaleShiftCallback done, const CallOptions& options) {
  if (internal::MayShare(core_->shm.get(), x)) {
    // scale_shift as a Call with x in shared memory (ClientOptions::shared_memory): x
    // alone is validated, the message limit not applying to it.
    if (absl::Status status = ValidateTensorView(x, "input"); !status.ok()) {
      done(std::move(status));
      return AsyncCall();
    }
    const Value args[] = {x, alpha, beta};
    internal::CallFields call{"myops::scale_shift", args, {}, options.device, 0};
    absl::StatusOr<std::shared_ptr<internal::ShmCall>> placed =
        internal::PlaceCall(core_->shm.get(), call, x.size_bytes);
    if (!placed.ok()) {
      done(placed.status());
      return AsyncCall();
    }
    if (*placed != nullptr) {
      std::shared_ptr<internal::ShmCall> shm = *std::move(placed);
      call.placement = &shm->placement;
      return AsyncCall(StartCall(
          core_, call, options,
          [done = std::move(done), shm, dtype = x.dtype, shape = x.shape,
           in_place = options.results_in_shared_memory](
              absl::Status status, const grpc::ByteBuffer& response, std::string replica) {
            if (!status.ok()) return done(std::move(status));
            const TensorView x{dtype, shape, nullptr, 0};
            absl::StatusOr<ScaleShiftResult> y =
                internal::DecodeScaleShift(response, shm, x, in_place);
            if (y.ok()) y->timing.replica = std::move(replica);
            done(std::move(y));
          },
          shm));
    }
  }
  if (absl::Status status = internal::ValidateRequest(x, alpha, beta, options.device, 0,
                                                      core_->options.max_message_bytes);
      !status.ok()) {
    done(std::move(status));
    return AsyncCall();
  }
  return AsyncCall(internal::StartAsyncScaleShift(core_, x, alpha, beta, std::move(done), options));
}

AsyncCall Client::CallAsync(absl::string_view op, absl::Span<const Value> args,
                            absl::Span<const NamedArg> kwargs, CallCallback done,
                            const CallOptions& options) {
  internal::CallFields call{op, args, kwargs, options.device, 0};
  absl::StatusOr<std::shared_ptr<internal::ShmCall>> placed =
      internal::PlaceCall(core_->shm.get(), call);
  if (!placed.ok()) {
    done(placed.status());
    return AsyncCall();
  }
  std::shared_ptr<internal::ShmCall> shm = *std::move(placed);
  call.placement = internal::PlacementOf(shm);
  return AsyncCall(StartCall(
      core_, call, options,
      [done = std::move(done), shm, in_place = options.results_in_shared_memory](
          absl::Status status, const grpc::ByteBuffer& response, std::string replica) {
        if (!status.ok()) return done(std::move(status));
        const std::optional<internal::ResponseRegion> region =
            internal::ResultRegion(shm, in_place);
        absl::StatusOr<CallResult> result =
            internal::DecodeCallResponse(response, region ? &*region : nullptr);
        if (result.ok()) result->timing.replica = std::move(replica);
        done(std::move(result));
      },
      shm));
}

AsyncCall Client::ListOperatorsAsync(OperatorsCallback done, const CallOptions& options) {
  return AsyncCall(internal::StartAsyncUnary(
      core_, internal::kListOperatorsMethod, SerializeMessage(myops::v1::ListOperatorsRequest()),
      internal::CallDeadline(core_->options, options),
      [done = std::move(done)](grpc::Status status, grpc::ByteBuffer bytes, std::string) {
        absl::StatusOr<myops::v1::ListOperatorsResponse> response =
            ParseResponse<myops::v1::ListOperatorsResponse>(status, bytes);
        if (!response.ok()) {
          done(response.status());
          return;
        }
        done(internal::DecodeOperators(*response));
      }));
}

AsyncCall Client::GetServerInfoAsync(ServerInfoCallback done, const CallOptions& options) {
  return AsyncCall(internal::StartAsyncUnary(
      core_, internal::kServerInfoMethod, SerializeMessage(myops::v1::ServerInfoRequest()),
      internal::CallDeadline(core_->options, options),
      [done = std::move(done)](grpc::Status status, grpc::ByteBuffer bytes, std::string) {
        absl::StatusOr<myops::v1::ServerInfoResponse> response =
            ParseResponse<myops::v1::ServerInfoResponse>(status, bytes);
        if (!response.ok()) {
          done(response.status());
          return;
        }
        done(internal::DecodeServerInfo(*response));
      }));
}

AsyncCall Client::HealthAsync(const std::string& service, HealthCallback done,
                              const CallOptions& options) {
  return AsyncCall(internal::StartAsyncUnary(
      core_, internal::kHealthCheckMethod, internal::EncodeHealthCheckRequest(service),
      internal::CallDeadline(core_->options, options),
      [done = std::move(done)](grpc::Status status, grpc::ByteBuffer response, std::string) {
        if (!status.ok()) {
          done(internal::ToAbslStatus(status));
          return;
        }
        absl::StatusOr<internal::ServingStatus> serving =
            internal::DecodeHealthCheckResponse(response);
        if (!serving.ok()) {
          done(serving.status());
          return;
        }
        done(*serving == internal::ServingStatus::kServing);
      }));
}

}  // namespace myops::client
