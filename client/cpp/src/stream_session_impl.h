// The sessions' shared core: internal::StreamCall, one bidi-stream call driven by
// blocking calls (bidi_call.h) with a write lock (Send, CloseSend) and a read lock
// (Receive, Close), and the two sessions built on it: StreamSession::Impl
// (ScaleShiftStream, protobuf messages) and CallStreamSession::Impl (CallStream, raw bytes
// of call_codec.h).
#ifndef MYOPS_CLIENT_SRC_STREAM_SESSION_IMPL_H_
#define MYOPS_CLIENT_SRC_STREAM_SESSION_IMPL_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include <grpcpp/client_context.h>
#include <grpcpp/support/byte_buffer.h>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "bidi_call.h"
#include "client_core.h"
#include "grpc_status.h"
#include "myops/client/client.h"
#include "retry.h"
#include "shm_call.h"

namespace myops::client {
namespace internal {

// Drops a reused request's buffers after a write when they have grown large.
inline void TrimAfterWrite(myops::v1::ScaleShiftRequest* request) {
  if (request->input().data().capacity() > (size_t{64} << 20)) {
    std::string().swap(*request->mutable_input()->mutable_data());
  }
}
inline void TrimAfterWrite(grpc::ByteBuffer* request) { request->Clear(); }

// Owns the call's context and stream. Lock order: read_mu_ before write_mu_ (finishing,
// after which no operation may start, runs under the read lock and then takes the write
// lock). std::mutex rather than absl::Mutex so ThreadSanitizer sees the locking with
// Debian's uninstrumented abseil; the annotations are checked by clang with an annotated
// standard library.
template <typename Request, typename Response>
class StreamCall {
 public:
  using Stream = typename BlockingBidiCall<Request, Response>::Stream;
  // Sets the call up, not started, on `context` (deadline and metadata already set) and
  // `queue`.
  using Open = std::function<std::unique_ptr<Stream>(grpc::ClientContext*, grpc::CompletionQueue*)>;

  StreamCall(std::shared_ptr<ClientCore> core, const CallOptions& options, const Open& open)
      : core_(std::move(core)),
        device_(options.device),
        deadline_(CallDeadline(core_->options, options)) {
    context_.set_deadline(deadline_);
    core_->Authorize(&context_);
    stream_.Start([&](grpc::CompletionQueue* queue) { return open(&context_, queue); });
  }

  ~StreamCall() {
    bool finished;
    {
      std::lock_guard<std::mutex> lock(read_mu_);
      finished = finished_;
    }
    if (!finished) context_.TryCancel();
    Close().IgnoreError();
  }

  const std::shared_ptr<ClientCore>& core() const { return core_; }
  const std::string& device() const { return device_; }

  // Takes the next request id, has `encode(id, &request)` fill the (reused) request and
  // writes it; returns the id. The caller has validated what it encodes.
  template <typename Encode>
  absl::StatusOr<uint64_t> Send(Encode&& encode) ABSL_LOCKS_EXCLUDED(write_mu_) {
    bool sent = false;
    return SendPieces([&](uint64_t id, Request* request) {
      if (sent) return false;
      encode(id, request);
      sent = true;
      return true;
    });
  }

  // As Send, for a request of several messages written back to back: `encode(id,
  // &request)` fills the next one and returns true, or returns false when all are sent.
  template <typename Encode>
  absl::StatusOr<uint64_t> SendPieces(Encode&& encode) ABSL_LOCKS_EXCLUDED(write_mu_) {
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
    while (encode(id, &request_)) {
      const bool written = stream_.Write(request_);
      TrimAfterWrite(&request_);
      if (!written) {
        write_failed_ = true;
        if (Clock::now() + kDeadlineClockSlack >= deadline_) return BlockedUntilDeadline(id);
        return absl::FailedPreconditionError(
            absl::StrCat("stream ended before request ", id,
                         " was sent; Receive() or Close() gives its final status"));
      }
    }
    return id;
  }

  absl::Status CloseSend() ABSL_LOCKS_EXCLUDED(write_mu_) {
    std::lock_guard<std::mutex> lock(write_mu_);
    if (!writes_done_) {
      writes_done_ = true;
      // Fails only when the stream has already ended; Receive/Close report why.
      if (!ended_) stream_.WritesDone();
    }
    return absl::OkStatus();
  }

  // Blocks for the next response and returns take(&response); once the stream has ended,
  // its final error (or OutOfRangeError when it ended OK).
  template <typename Take>
  absl::StatusOr<std::invoke_result_t<Take&, Response*>> Receive(Take&& take)
      ABSL_LOCKS_EXCLUDED(read_mu_, write_mu_) {
    std::lock_guard<std::mutex> lock(read_mu_);
    if (!ReadOne()) return EndedStatus();
    return take(&response_);
  }

  // As Receive, for a response of several messages: `take(&response, read_next)`, where
  // read_next() reads the next message into the same response (false once the stream
  // has ended).
  template <typename Take>
  absl::StatusOr<std::invoke_result_t<Take&, Response*, const std::function<bool()>&>>
  ReceivePieces(Take&& take) ABSL_LOCKS_EXCLUDED(read_mu_, write_mu_) {
    std::lock_guard<std::mutex> lock(read_mu_);
    if (!ReadOne()) return EndedStatus();
    // Runs only inside take, under read_mu_ (which the analysis cannot see through it).
    const std::function<bool()> read_next = [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
      if (!ReadOne()) return false;
      received_.fetch_sub(1);  // A piece of the response counted once.
      return true;
    };
    return take(&response_, read_next);
  }

  // CloseSend, then discards responses not yet received, waits for the server to end the
  // stream and returns its final status.
  absl::Status Close() ABSL_LOCKS_EXCLUDED(read_mu_, write_mu_) {
    CloseSend().IgnoreError();
    std::lock_guard<std::mutex> lock(read_mu_);
    while (ReadOne()) ++discarded_;
    return final_status_;
  }

  // gRPC's TryCancel: thread-safe, and unblocks a Send or Receive in progress.
  void Cancel() { context_.TryCancel(); }

  int64_t discarded_responses() const ABSL_LOCKS_EXCLUDED(read_mu_) {
    std::lock_guard<std::mutex> lock(read_mu_);
    return discarded_;
  }

  // The replica serving the stream (ServingReplica), once a response has been received;
  // "" before, or when the server names none. A stream stays on one replica.
  std::string replica() const ABSL_LOCKS_EXCLUDED(read_mu_) {
    std::lock_guard<std::mutex> lock(read_mu_);
    return replica_;
  }

 private:
  // gRPC keeps the call's deadline on its own monotonic clock in whole milliseconds, and
  // the server ends the call on its copy of the deadline: a stream can end for its deadline
  // a little before Clock reaches deadline_. A write that fails this close to the deadline
  // failed because of it.
  static constexpr std::chrono::milliseconds kDeadlineClockSlack{20};

  // Reads one response into response_; on the end of the stream, finishes the call.
  // Returns false when the stream has ended (final_status_ is then set).
  bool ReadOne() ABSL_EXCLUSIVE_LOCKS_REQUIRED(read_mu_) ABSL_LOCKS_EXCLUDED(write_mu_) {
    if (finished_) return false;
    if (stream_.Read(&response_)) {
      received_.fetch_add(1);
      if (!replica_known_) {  // A read that returned a message had the metadata first.
        replica_ = ServingReplica(context_);
        replica_known_ = true;
      }
      return true;
    }
    // The server has ended the stream (or it failed): no write may start from here on.
    std::lock_guard<std::mutex> lock(write_mu_);
    ended_ = true;
    write_failed_ = true;
    final_status_ = ToAbslStatus(stream_.Finish());
    finished_ = true;
    return false;
  }

  // What Send returns when its write was still held by flow control at the deadline.
  absl::Status BlockedUntilDeadline(uint64_t id) const {
    const int64_t sent = static_cast<int64_t>(id) - 1;
    const int64_t unreceived = sent - received_.load();
    if (unreceived <= 0) {
      return absl::DeadlineExceededError(
          absl::StrCat("request ", id, " was not sent before the stream's deadline"));
    }
    return absl::DeadlineExceededError(absl::StrCat(
        "request ", id, " was not sent before the stream's deadline: ", unreceived, " of the ",
        sent,
        " responses were not received, and the server stops reading requests while its "
        "responses are not read, so Send waited for flow control until the deadline; call "
        "Receive() (on another thread) while sending"));
  }

  // What Receive returns once the stream has ended.
  absl::Status EndedStatus() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(read_mu_) {
    if (!final_status_.ok()) return final_status_;
    return absl::OutOfRangeError(
        absl::StrCat("stream ended: all ", received_.load(), " responses were received"));
  }

  const std::shared_ptr<ClientCore> core_;
  const std::string device_;
  const std::chrono::system_clock::time_point deadline_;  // The session's.
  grpc::ClientContext context_;
  // Started in the constructor; its reads under read_mu_, its writes under write_mu_.
  BlockingBidiCall<Request, Response> stream_;

  mutable std::mutex read_mu_;
  Response response_ ABSL_GUARDED_BY(read_mu_);
  bool finished_ ABSL_GUARDED_BY(read_mu_) = false;
  absl::Status final_status_ ABSL_GUARDED_BY(read_mu_);
  // Written under read_mu_; read by Send too (to explain a write the deadline ended).
  std::atomic<int64_t> received_{0};
  int64_t discarded_ ABSL_GUARDED_BY(read_mu_) = 0;
  // The server's replica (ServingReplica), read once its initial metadata has arrived.
  std::string replica_ ABSL_GUARDED_BY(read_mu_);
  bool replica_known_ ABSL_GUARDED_BY(read_mu_) = false;

  std::mutex write_mu_ ABSL_ACQUIRED_AFTER(read_mu_);
  Request request_ ABSL_GUARDED_BY(write_mu_);
  uint64_t next_request_id_ ABSL_GUARDED_BY(write_mu_) = 1;
  bool writes_done_ ABSL_GUARDED_BY(write_mu_) = false;
  bool write_failed_ ABSL_GUARDED_BY(write_mu_) = false;
  bool ended_ ABSL_GUARDED_BY(write_mu_) = false;  // Finished: CloseSend starts nothing.
};

}  // namespace internal

// One ScaleShiftStream call.
class StreamSession::Impl : public internal::StreamCall<myops::v1::ScaleShiftRequest,
                                                        myops::v1::ScaleShiftStreamResponse> {
 public:
  Impl(std::shared_ptr<internal::ClientCore> core, const CallOptions& options);
};

// One CallStream call, in raw bytes (call_codec.h), and the shared memory regions of its
// requests sent and not yet answered (shm_call.h).
class CallStreamSession::Impl : public internal::StreamCall<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  Impl(std::shared_ptr<internal::ClientCore> core, const CallOptions& options);

  // Request `id` went with `shm`'s region; kept until its response is taken.
  void KeepRegion(uint64_t id, std::shared_ptr<internal::ShmCall> shm)
      ABSL_LOCKS_EXCLUDED(regions_mu_) {
    std::lock_guard<std::mutex> lock(regions_mu_);
    regions_[id] = std::move(shm);
  }
  // The region of request `id`'s response, which gives it up; none if it had none.
  std::optional<internal::ResponseRegion> TakeRegion(uint64_t id) ABSL_LOCKS_EXCLUDED(regions_mu_) {
    std::shared_ptr<internal::ShmCall> shm;
    {
      std::lock_guard<std::mutex> lock(regions_mu_);
      auto it = regions_.find(id);
      if (it == regions_.end()) return std::nullopt;
      shm = std::move(it->second);
      regions_.erase(it);
    }
    return internal::ResultRegion(shm, in_place_);
  }

 private:
  const bool in_place_;  // CallOptions::results_in_shared_memory
  std::mutex regions_mu_;
  std::map<uint64_t, std::shared_ptr<internal::ShmCall>> regions_ ABSL_GUARDED_BY(regions_mu_);
};

}  // namespace myops::client

#endif  // MYOPS_CLIENT_SRC_STREAM_SESSION_IMPL_H_
