// Client's generic calls: Call, OpenCallStream and ListOperators (see
// myops/client/client.h; the bytes are call_codec.h's; CallAsync is in client_async.cc).
#include <utility>

#include <grpcpp/client_context.h>
#include <grpcpp/impl/client_unary_call.h>
#include <grpcpp/support/byte_buffer.h>

#include "call_codec.h"
#include "client_core.h"
#include "grpc_status.h"
#include "myops/client/client.h"
#include "retry.h"
#include "stream_session_impl.h"

namespace myops::client {

absl::StatusOr<CallResult> Client::Call(absl::string_view op, absl::Span<const Value> args,
                                        absl::Span<const NamedArg> kwargs,
                                        const CallOptions& options) {
  const internal::CallFields call{op, args, kwargs, options.device, 0};
  if (absl::Status status = internal::ValidateCall(call, core_->options.max_message_bytes);
      !status.ok()) {
    return status;
  }
  const grpc::ByteBuffer request = internal::EncodeCallRequest(call, *core_->send_buffers);
  grpc::ByteBuffer response;
  grpc::Status status = internal::CallWithRetries(
      core_->options.retry, internal::CallDeadline(core_->options, options),
      [&](grpc::ClientContext* context) {
        core_->Authorize(context);
        response.Clear();
        return grpc::internal::BlockingUnaryCall<grpc::ByteBuffer, grpc::ByteBuffer>(
            core_->channel.get(), *core_->call, context, request, &response);
      });
  if (!status.ok()) return internal::ToAbslStatus(status);
  return internal::DecodeCallResponse(response);
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
