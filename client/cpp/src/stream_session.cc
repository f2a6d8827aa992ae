// StreamSession and CallStreamSession: pipelined ScaleShift calls on one ScaleShiftStream
// RPC and pipelined generic Calls on one CallStream RPC (see myops/client/client.h and
// stream_session_impl.h).
#include <cstdint>
#include <limits>
#include <utility>

#include "call_codec.h"
#include "codec.h"
#include "stream_session_impl.h"

namespace myops::client {

StreamSession::Impl::Impl(std::shared_ptr<internal::ClientCore> core, const CallOptions& options)
    : StreamCall(std::move(core), options, [this](grpc::ClientContext* context) {
        return this->core()->stub->ScaleShiftStream(context);
      }) {}

StreamSession::StreamSession(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

StreamSession::~StreamSession() = default;

absl::StatusOr<uint64_t> StreamSession::Send(const TensorView& x, double alpha, double beta) {
  // The id is not known before the lock: its largest encoding stands in for it.
  if (absl::Status status = internal::ValidateRequest(x, alpha, beta, impl_->device(),
                                                      std::numeric_limits<uint64_t>::max(),
                                                      impl_->core()->options.max_message_bytes);
      !status.ok()) {
    return status;
  }
  return impl_->Send([&](uint64_t id, myops::v1::ScaleShiftRequest* request) {
    internal::EncodeRequest(x, alpha, beta, impl_->device(), id, request);
  });
}

absl::Status StreamSession::CloseSend() { return impl_->CloseSend(); }

absl::StatusOr<StreamResult> StreamSession::Receive() {
  absl::StatusOr<StreamResult> result =
      impl_->Receive([](myops::v1::ScaleShiftStreamResponse* response) {
        return internal::TakeStreamResult(response);
      });
  if (result.ok() && result->result.ok()) result->result->timing.replica = impl_->replica();
  return result;
}

absl::Status StreamSession::Close() { return impl_->Close(); }

int64_t StreamSession::discarded_responses() const { return impl_->discarded_responses(); }

CallStreamSession::Impl::Impl(std::shared_ptr<internal::ClientCore> core,
                              const CallOptions& options)
    : StreamCall(std::move(core), options, [this](grpc::ClientContext* context) {
        return std::unique_ptr<Stream>(
            grpc::internal::ClientReaderWriterFactory<grpc::ByteBuffer, grpc::ByteBuffer>::Create(
                this->core()->channel.get(), *this->core()->call_stream, context));
      }) {}

CallStreamSession::CallStreamSession(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

CallStreamSession::~CallStreamSession() = default;

absl::StatusOr<uint64_t> CallStreamSession::Send(absl::string_view op, absl::Span<const Value> args,
                                                 absl::Span<const NamedArg> kwargs) {
  // The id is not known before the lock: its largest encoding stands in for it.
  internal::CallFields call{op, args, kwargs, impl_->device(),
                            std::numeric_limits<uint64_t>::max()};
  if (absl::Status status = internal::ValidateCall(call, impl_->core()->options.max_message_bytes);
      !status.ok()) {
    return status;
  }
  return impl_->Send([&](uint64_t id, grpc::ByteBuffer* request) {
    call.request_id = id;
    *request = internal::EncodeCallRequest(call, *impl_->core()->send_buffers);
  });
}

absl::Status CallStreamSession::CloseSend() { return impl_->CloseSend(); }

absl::StatusOr<CallStreamResult> CallStreamSession::Receive() {
  return impl_->Receive([](grpc::ByteBuffer* response) {
    CallStreamResult result = internal::DecodeCallStreamResponse(*response);
    response->Clear();  // Releases the received slices now rather than at the next Read.
    return result;
  });
}

absl::Status CallStreamSession::Close() { return impl_->Close(); }

int64_t CallStreamSession::discarded_responses() const { return impl_->discarded_responses(); }

}  // namespace myops::client
