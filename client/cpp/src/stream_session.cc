// StreamSession: pipelined ScaleShift calls on one ScaleShiftStream RPC (see
// myops/client/client.h and stream_session_impl.h).
#include <cstdint>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "codec.h"
#include "grpc_status.h"
#include "retry.h"
#include "stream_session_impl.h"

namespace myops::client {

StreamSession::Impl::Impl(std::shared_ptr<internal::ClientCore> core, const CallOptions& options)
    : core_(std::move(core)),
      device_(options.device),
      deadline_(internal::CallDeadline(core_->options, options)) {
  context_.set_deadline(deadline_);
  core_->Authorize(&context_);
  stream_ = core_->stub->ScaleShiftStream(&context_);
}

StreamSession::Impl::~Impl() {
  bool finished;
  {
    std::lock_guard<std::mutex> lock(read_mu_);
    finished = finished_;
  }
  if (!finished) context_.TryCancel();
  Close().IgnoreError();
}

absl::StatusOr<uint64_t> StreamSession::Impl::Send(const TensorView& x, double alpha, double beta) {
  // The id is not known before the lock: its largest encoding stands in for it.
  if (absl::Status status =
          internal::ValidateRequest(x, alpha, beta, device_, std::numeric_limits<uint64_t>::max(),
                                    core_->options.max_message_bytes);
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
  const uint64_t id = next_request_id_++;
  internal::EncodeRequest(x, alpha, beta, device_, id, &request_);
  const bool written = stream_->Write(request_);
  if (request_.input().data().capacity() > (size_t{64} << 20)) {
    std::string().swap(*request_.mutable_input()->mutable_data());
  }
  if (!written) {
    write_failed_ = true;
    if (internal::Clock::now() >= deadline_) return BlockedUntilDeadline(id);
    return absl::FailedPreconditionError(
        absl::StrCat("stream ended before request ", id,
                     " was sent; Receive() or Close() gives its final "
                     "status"));
  }
  return id;
}

absl::Status StreamSession::Impl::BlockedUntilDeadline(uint64_t id) const {
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

absl::Status StreamSession::Impl::CloseSend() {
  std::lock_guard<std::mutex> lock(write_mu_);
  if (!writes_done_) {
    writes_done_ = true;
    // False only when the stream has already ended; Receive/Close report why.
    stream_->WritesDone();
  }
  return absl::OkStatus();
}

bool StreamSession::Impl::ReadOne() {
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

absl::Status StreamSession::Impl::EndedStatus() const {
  if (!final_status_.ok()) return final_status_;
  return absl::OutOfRangeError(
      absl::StrCat("stream ended: all ", received_.load(), " responses were received"));
}

absl::StatusOr<StreamResult> StreamSession::Impl::Receive() {
  std::lock_guard<std::mutex> lock(read_mu_);
  if (!ReadOne()) return EndedStatus();
  return internal::TakeStreamResult(&response_);
}

absl::Status StreamSession::Impl::Close() {
  CloseSend().IgnoreError();
  std::lock_guard<std::mutex> lock(read_mu_);
  while (ReadOne()) ++discarded_;
  return final_status_;
}

int64_t StreamSession::Impl::discarded_responses() const {
  std::lock_guard<std::mutex> lock(read_mu_);
  return discarded_;
}

StreamSession::StreamSession(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

StreamSession::~StreamSession() = default;

absl::StatusOr<uint64_t> StreamSession::Send(const TensorView& x, double alpha, double beta) {
  return impl_->Send(x, alpha, beta);
}

absl::Status StreamSession::CloseSend() { return impl_->CloseSend(); }

absl::StatusOr<StreamResult> StreamSession::Receive() { return impl_->Receive(); }

absl::Status StreamSession::Close() { return impl_->Close(); }

int64_t StreamSession::discarded_responses() const { return impl_->discarded_responses(); }

}  // namespace myops::client
