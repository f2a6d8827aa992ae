// Client's generic calls: Call, OpenCallStream and ListOperators (see
// myops/client/client.h; the bytes are call_codec.h's; CallAsync is in client_async.cc).
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include <grpcpp/client_context.h>
#include <grpcpp/support/byte_buffer.h>

#include "call_codec.h"
#include "client_core.h"
#include "grpc_status.h"
#include "myops/client/client.h"
#include "retry.h"
#include "shm_call.h"
#include "stream_session_impl.h"
#include "unary_call.h"

namespace myops::client {

absl::Status internal::CallRaw(const ClientCore& core, const CallFields& call,
                               const CallOptions& options, grpc::ByteBuffer* response,
                               std::string* replica) {
  if (absl::Status status = ValidateCall(call, core.options.max_message_bytes); !status.ok()) {
    return status;
  }
  const grpc::ByteBuffer request = EncodeCallRequest(call, *core.send_buffers);
  return ToAbslStatus(CallWithRetries(
      core.options.retry, CallDeadline(core.options, options), [&](grpc::ClientContext* context) {
        core.Authorize(context);
        response->Clear();
        grpc::Status status =
            BlockingUnaryCall(*core.generic_stub, context, kCallMethod, request, response);
        if (replica != nullptr) *replica = ServingReplica(*context);
        return status;
      }));
}

absl::StatusOr<CallResult> Client::Call(absl::string_view op, absl::Span<const Value> args,
                                        absl::Span<const NamedArg> kwargs,
                                        const CallOptions& options) {
  internal::CallFields call{op, args, kwargs, options.device, 0};
  for (int placements = 1;; ++placements) {
    absl::StatusOr<std::shared_ptr<internal::ShmCall>> shm =
        internal::PlaceCall(core_->shm.get(), call);
    if (!shm.ok()) return shm.status();
    call.placement = internal::PlacementOf(*shm);
    grpc::ByteBuffer response;
    std::string replica;
    absl::Status status = internal::CallRaw(*core_, call, options, &response, &replica);
    if (!status.ok()) {
      // Once more with new regions when the server lost this client's (it restarted).
      if (placements == 1 &&
          internal::ForgetIfUnknownRegion(core_->shm.get(), shm->get(), status)) {
        continue;
      }
      return status;
    }
    const std::optional<internal::ResponseRegion> region =
        internal::ResultRegion(*shm, options.results_in_shared_memory);
    absl::StatusOr<CallResult> result =
        internal::DecodeCallResponse(response, region ? &*region : nullptr);
    if (result.ok()) result->timing.replica = std::move(replica);
    return result;
  }
}

absl::StatusOr<std::unique_ptr<CallStreamSession>> Client::OpenCallStream(
    const CallOptions& options) {
  return std::unique_ptr<CallStreamSession>(
      new CallStreamSession(std::make_unique<CallStreamSession::Impl>(core_, options)));
}

absl::StatusOr<std::vector<OperatorDescription>> Client::ListOperators(const CallOptions& options) {
  myops::v1::ListOperatorsResponse response;
  grpc::Status status = internal::CallWithRetries(
      core_->options.retry, internal::CallDeadline(core_->options, options),
      [&](grpc::ClientContext* context) {
        core_->Authorize(context);
        response.Clear();
        return core_->stub->ListOperators(context, myops::v1::ListOperatorsRequest(), &response);
      });
  if (!status.ok()) return internal::ToAbslStatus(status);
  return internal::DecodeOperators(response);
}

}  // namespace myops::client
