// CallStreamSession::Impl: one CallStream call over the synchronous bidi-stream API with
// raw bytes (call_codec.h), with StreamSession::Impl's locking: a write lock (Send,
// CloseSend) and a read lock (Receive, Close).
#ifndef MYOPS_CLIENT_SRC_CALL_STREAM_IMPL_H_
#define MYOPS_CLIENT_SRC_CALL_STREAM_IMPL_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include <grpcpp/client_context.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/sync_stream.h>

#include "absl/base/thread_annotations.h"
#include "client_core.h"
#include "myops/client/client.h"

namespace myops::client {

// Owns the call's context and stream. Lock order: read_mu_ before write_mu_ (Finish,
// which needs both, runs under the read lock and then takes the write lock); std::mutex
// for ThreadSanitizer, as in StreamSession::Impl.
class CallStreamSession::Impl {
 public:
  Impl(std::shared_ptr<internal::ClientCore> core, const CallOptions& options);
  ~Impl();

  absl::StatusOr<uint64_t> Send(absl::string_view op, absl::Span<const Value> args,
                                absl::Span<const NamedArg> kwargs) ABSL_LOCKS_EXCLUDED(write_mu_);
  absl::Status CloseSend() ABSL_LOCKS_EXCLUDED(write_mu_);
  absl::StatusOr<CallStreamResult> Receive() ABSL_LOCKS_EXCLUDED(read_mu_, write_mu_);
  absl::Status Close() ABSL_LOCKS_EXCLUDED(read_mu_, write_mu_);
  int64_t discarded_responses() const ABSL_LOCKS_EXCLUDED(read_mu_);

 private:
  using Stream = grpc::ClientReaderWriter<grpc::ByteBuffer, grpc::ByteBuffer>;

  // Reads one response into response_; on the end of the stream, finishes the call.
  // Returns false when the stream has ended (final_status_ is then set).
  bool ReadOne() ABSL_EXCLUSIVE_LOCKS_REQUIRED(read_mu_) ABSL_LOCKS_EXCLUDED(write_mu_);
  absl::Status BlockedUntilDeadline(uint64_t id) const;
  absl::Status EndedStatus() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(read_mu_);

  const std::shared_ptr<internal::ClientCore> core_;
  const std::string device_;
  const std::chrono::system_clock::time_point deadline_;  // The session's.
  grpc::ClientContext context_;
  std::unique_ptr<Stream> stream_;  // Set in the constructor; thread-safe per the locks.

  mutable std::mutex read_mu_;
  grpc::ByteBuffer response_ ABSL_GUARDED_BY(read_mu_);
  bool finished_ ABSL_GUARDED_BY(read_mu_) = false;
  absl::Status final_status_ ABSL_GUARDED_BY(read_mu_);
  std::atomic<int64_t> received_{0};  // Written under read_mu_; read by Send too.
  int64_t discarded_ ABSL_GUARDED_BY(read_mu_) = 0;

  std::mutex write_mu_ ABSL_ACQUIRED_AFTER(read_mu_);
  uint64_t next_request_id_ ABSL_GUARDED_BY(write_mu_) = 1;
  bool writes_done_ ABSL_GUARDED_BY(write_mu_) = false;
  bool write_failed_ ABSL_GUARDED_BY(write_mu_) = false;
};

}  // namespace myops::client

#endif  // MYOPS_CLIENT_SRC_CALL_STREAM_IMPL_H_
