// CallStreamSession: pipelined generic Calls on one CallStream RPC (see
// myops/client/client.h and call_stream_impl.h).
#include <cstdint>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "call_codec.h"
#include "call_stream_impl.h"
#include "grpc_status.h"
#include "retry.h"

namespace myops::client {

CallStreamSession::Impl::Impl(std::shared_ptr<internal::ClientCore> core,
                              const CallOptions& options)
    : core_(std::move(core)),
      device_(options.device),
      deadline_(internal::CallDeadline(core_->options, options)) {
  context_.set_deadline(deadline_);
  core_->Authorize(&context_);
  stream_.reset(
      grpc::internal::ClientReaderWriterFactory<grpc::ByteBuffer, grpc::ByteBuffer>::Create(
          core_->channel.get(), *core_->call_stream, &context_));
}

CallStreamSession::Impl::~Impl() {
  bool finished;
  {
    std::lock_guard<std::mutex> lock(read_mu_);
    finished = finished_;
  }
  if (!finished) context_.TryCancel();
  Close().IgnoreError();
}

absl::StatusOr<uint64_t> CallStreamSession::Impl::Send(absl::string_view op,
                                                       absl::Span<const Value> args,
                                                       absl::Span<const NamedArg> kwargs) {
  // The id is not known before the lock: its largest encoding stands in for it.
  internal::CallFields call{op, args, kwargs, device_, std::numeric_limits<uint64_t>::max()};
  if (absl::Status status = internal::ValidateCall(call, core_->options.max_message_bytes);
      !status.ok()) {
    return status;
  }
  std::lock_guard<std::mutex> lock(write_mu_);
  if (writes_done_) {
    return absl::FailedPreconditionError(
        "stream is closed for sending (CloseSend or Close was called)");
  }
  if (write_failed_) {
    return absl::FailedPreconditionError(
        "stream has ended; Receive() or Close() gives its final status");
  }
  call.request_id = next_request_id_++;
  const grpc::ByteBuffer request = internal::EncodeCallRequest(call, *core_->send_buffers);
  if (!stream_->Write(request)) {
    write_failed_ = true;
    if (internal::Clock::now() >= deadline_) return BlockedUntilDeadline(call.request_id);
    return absl::FailedPreconditionError(
        absl::StrCat("stream ended before request ", call.request_id,
                     " was sent; Receive() or Close() gives its final status"));
  }
  return call.request_id;
}

absl::Status CallStreamSession::Impl::BlockedUntilDeadline(uint64_t id) const {
  const int64_t sent = static_cast<int64_t>(id) - 1;
  const int64_t unreceived = sent - received_.load();
  if (unreceived <= 0) {
    return absl::DeadlineExceededError(
        absl::StrCat("request ", id, " was not sent before the stream's deadline"));
  }
  return absl::DeadlineExceededError(absl::StrCat(
      "request ", id, " was not sent before the stream's deadline: ", unreceived, " of the ", sent,
      " responses were not received, and the server stops reading requests while its "
      "responses are not read, so Send waited for flow control until the deadline; call "
      "Receive() (on another thread) while sending"));
}

absl::Status CallStreamSession::Impl::CloseSend() {
  std::lock_guard<std::mutex> lock(write_mu_);
  if (!writes_done_) {
    writes_done_ = true;
    stream_->WritesDone();  // False only when the stream has ended; Receive/Close say why.
  }
  return absl::OkStatus();
}

bool CallStreamSession::Impl::ReadOne() {
  if (finished_) return false;
  if (stream_->Read(&response_)) {
    received_.fetch_add(1);
    return true;
  }
  // The server has ended the stream (or it failed): no write may run during Finish.
  std::lock_guard<std::mutex> lock(write_mu_);
  final_status_ = internal::ToAbslStatus(stream_->Finish());
  finished_ = true;
  write_failed_ = true;
  return false;
}

absl::Status CallStreamSession::Impl::EndedStatus() const {
  if (!final_status_.ok()) return final_status_;
  return absl::OutOfRangeError(
      absl::StrCat("stream ended: all ", received_.load(), " responses were received"));
}

absl::StatusOr<CallStreamResult> CallStreamSession::Impl::Receive() {
  std::lock_guard<std::mutex> lock(read_mu_);
  if (!ReadOne()) return EndedStatus();
  CallStreamResult result = internal::DecodeCallStreamResponse(response_);
  response_.Clear();  // Releases the received slices now rather than at the next Read.
  return result;
}

absl::Status CallStreamSession::Impl::Close() {
  CloseSend().IgnoreError();
  std::lock_guard<std::mutex> lock(read_mu_);
  while (ReadOne()) ++discarded_;
  return final_status_;
}

int64_t CallStreamSession::Impl::discarded_responses() const {
  std::lock_guard<std::mutex> lock(read_mu_);
  return discarded_;
}

CallStreamSession::CallStreamSession(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

CallStreamSession::~CallStreamSession() = default;

absl::StatusOr<uint64_t> CallStreamSession::Send(absl::string_view op, absl::Span<const Value> args,
                                                 absl::Span<const NamedArg> kwargs) {
  return impl_->Send(op, args, kwargs);
}

absl::Status CallStreamSession::CloseSend() { return impl_->CloseSend(); }

absl::StatusOr<CallStreamResult> CallStreamSession::Receive() { return impl_->Receive(); }

absl::Status CallStreamSession::Close() { return impl_->Close(); }

int64_t CallStreamSession::discarded_responses() const { return impl_->discarded_responses(); }

}  // namespace myops::client
