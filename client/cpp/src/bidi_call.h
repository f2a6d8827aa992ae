// BlockingBidiCall: a bidi-stream call of gRPC's asynchronous API, on a completion queue of
// its own, driven by blocking calls (Write, Read, Finish) for StreamCall
// (stream_session_impl.h). The threads waiting poll the queue themselves, as gRPC's
// synchronous API does: no gRPC thread runs between the network and the waiting caller.
#ifndef MYOPS_CLIENT_SRC_BIDI_CALL_H_
#define MYOPS_CLIENT_SRC_BIDI_CALL_H_

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>

#include <grpcpp/completion_queue.h>
#include <grpcpp/support/async_stream.h>
#include <grpcpp/support/status.h>

#include "absl/base/thread_annotations.h"

namespace myops::client::internal {

// The caller serializes the writes (Write, WritesDone) and, separately, the reads (Read,
// Finish): one of each may be outstanding, as gRPC requires, so that one thread may write
// while another reads. The waiting threads take turns polling the queue: one polls, and
// records each operation it sees completed, its own or the other thread's, which it wakes.
// std::mutex for ThreadSanitizer, as in stream_session_impl.h.
template <typename Request, typename Response>
class BlockingBidiCall {
 public:
  using Stream = grpc::ClientAsyncReaderWriter<Request, Response>;

  BlockingBidiCall() = default;
  BlockingBidiCall(const BlockingBidiCall&) = delete;
  BlockingBidiCall& operator=(const BlockingBidiCall&) = delete;

  // Once every operation has completed (Finish has returned, or Start was not called).
  ~BlockingBidiCall() {
    cq_.Shutdown();
    void* tag;
    bool ok;
    while (cq_.Next(&tag, &ok)) {
    }
  }

  // Starts the call that `prepare(&queue)` has set up (its stream, on its context) and
  // waits until it has started.
  template <typename Prepare>
  void Start(Prepare&& prepare) {
    stream_ = prepare(&cq_);
    stream_->StartCall(Tag(kStart));
    Wait(kStart);
  }

  // Writes `request`; false once the call has ended.
  bool Write(const Request& request) ABSL_LOCKS_EXCLUDED(mu_) {
    stream_->Write(request, Tag(kWrite));
    return Wait(kWrite);
  }

  // Half-closes the call; false when it has ended already.
  bool WritesDone() ABSL_LOCKS_EXCLUDED(mu_) {
    stream_->WritesDone(Tag(kWrite));
    return Wait(kWrite);
  }

  // Reads the next message into `response`; false once the call has ended.
  bool Read(Response* response) ABSL_LOCKS_EXCLUDED(mu_) {
    stream_->Read(response, Tag(kRead));
    return Wait(kRead);
  }

  // After a Read has returned false and with no write outstanding: the final status.
  grpc::Status Finish() ABSL_LOCKS_EXCLUDED(mu_) {
    grpc::Status status;
    stream_->Finish(&status, Tag(kRead));
    Wait(kRead);
    return status;
  }

 private:
  // The operations' tags: at most one of each kind is outstanding.
  enum Kind { kStart, kWrite, kRead, kKinds };
  struct Op {
    bool done = false;
    bool ok = false;
  };

  static void* Tag(Kind kind) { return reinterpret_cast<void*>(static_cast<intptr_t>(kind) + 1); }
  static Kind KindOf(void* tag) { return static_cast<Kind>(reinterpret_cast<intptr_t>(tag) - 1); }

  // Waits for the operation of `kind` to complete; whether it succeeded.
  bool Wait(Kind kind) ABSL_LOCKS_EXCLUDED(mu_) {
    std::unique_lock<std::mutex> lock(mu_);
    while (!ops_[kind].done) {
      if (polling_) {  // Another thread polls and wakes this one.
        cv_.wait(lock);
        continue;
      }
      polling_ = true;
      lock.unlock();
      void* tag;
      bool ok;
      // False only once the queue is shut down, which no outstanding operation allows.
      const bool got = cq_.Next(&tag, &ok);
      lock.lock();
      polling_ = false;
      if (got) ops_[KindOf(tag)] = Op{true, ok};
      cv_.notify_all();  // The other thread's operation, or its turn to poll.
    }
    ops_[kind].done = false;
    return ops_[kind].ok;
  }

  grpc::CompletionQueue cq_;
  std::unique_ptr<Stream> stream_;  // Set by Start; allocated on the call.
  std::mutex mu_;
  std::condition_variable cv_;
  bool polling_ ABSL_GUARDED_BY(mu_) = false;  // A thread is in cq_.Next.
  Op ops_[kKinds] ABSL_GUARDED_BY(mu_);
};

}  // namespace myops::client::internal

#endif  // MYOPS_CLIENT_SRC_BIDI_CALL_H_
