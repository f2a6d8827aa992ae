// The bidirectional streaming RPCs' reactor (ScaleShiftStream, CallStream, and the Open
// Inference Protocol's ModelStreamInfer): pipelined requests on one stream, bounded
// read-ahead, responses written in completion order. Private to the front ends.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include <grpcpp/server_context.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/server_callback.h>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "pipeline/metrics.h"
#include "pipeline/pipeline.h"
#include "pipeline/timing.h"

namespace myops::server {

// A stream's read-ahead: it stops reading (HTTP/2 flow control then pushes back on its
// client) while it has kMaxOutstandingPerStream requests, or kStreamWindowBytes of
// request and response bytes, read and not yet answered. Items also hold the memory
// budget, which bounds all streams together; this keeps one stream from taking it all.
inline constexpr int kMaxOutstandingPerStream = 32;
inline constexpr int64_t kStreamWindowBytes = int64_t{64} << 20;

// One bidirectional stream: reads requests as they come (pipelining), processes each,
// and writes responses in completion order, one write at a time. Deletes itself in
// OnDone. mu_ guards what is annotated so; pipeline_, rpc_, context_ and admitted_ are
// fixed, and read_buffer_ and assembly_ belong to the one read in progress.
//
// `Kind` supplies every step of its RPC (ScaleShiftStream in myops_v1/service.cc,
// CallStream in myops_v1/call_service.cc, ModelStreamInfer in oip/grpc/service.cc):
//  - `State`: one request's state, default-constructible;
//  - `Assembly`, made per stream by `static Assembly MakeAssembly(Pipeline*)` and used
//    only by the one read in progress: what a request of several messages (CallStream's
//    chunked tensors) keeps between them;
//  - `static bool Receive(Pipeline*, const grpc::ByteBuffer&, Assembly*, State*,
//    absl::Status* parsed)`: one message; false when it completed no request;
//  - `static bool TakeUnfinished(Assembly*, State*, absl::Status*)`: once the client has
//    closed its side, one request left incomplete to answer (false: none left);
//  - `static void Process(Pipeline*, State*, received, deadline, is_cancelled, done)`;
//  - `static absl::StatusOr<grpc::ByteBuffer> Encode(const State&, const Timing&)`, or a
//    StatusOr<std::vector<grpc::ByteBuffer>>: a response of several messages, written
//    back to back;
//  - `static grpc::ByteBuffer EncodeError(const State&, const absl::Status&)`: a failed
//    request's answer in the protocol's own form (the stream goes on);
//  - `static uint64_t InputBytes(const State&)`, for the metrics.
// A Kind whose requests are each one message derives its message steps from
// OneMessagePerRequest.
template <typename Kind>
struct OneMessagePerRequest {
  // Nothing is kept between messages. The Kind supplies `static absl::Status
  // Parse(Pipeline*, const grpc::ByteBuffer&, State*)`.
  struct Assembly {};
  static Assembly MakeAssembly(Pipeline*) { return {}; }
  template <typename State>
  static bool Receive(Pipeline* pipeline, const grpc::ByteBuffer& bytes, Assembly*, State* state,
                      absl::Status* parsed) {
    *parsed = Kind::Parse(pipeline, bytes, state);
    return true;
  }
  template <typename State>
  static bool TakeUnfinished(Assembly*, State*, absl::Status*) {
    return false;
  }
};

template <typename Kind>
class StreamReactor final : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  // Takes one of `pipeline`'s open-stream slots (RESOURCE_EXHAUSTED when none is free);
  // records each request in `rpc`'s metrics.
  StreamReactor(Pipeline* pipeline, Metrics::Rpc* rpc, grpc::CallbackServerContext* context)
      : pipeline_(pipeline),
        rpc_(rpc),
        context_(context),
        admitted_(pipeline->TryOpenStream()),
        assembly_(Kind::MakeAssembly(pipeline)) {
    absl::MutexLock lock(&mu_);
    if (!admitted_) {
      finished_ = true;
      Finish(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                          "the server is at its limit of open streams; retry later"));
      return;
    }
    MaybeReadLocked();
  }

  void OnReadDone(bool ok) override {
    const auto received = std::chrono::steady_clock::now();
    if (!ok) return OnReadsDone();
    auto item = std::make_unique<Item>();
    // Bounded work and memory, whatever the bytes (wire::kMaxHeadBytes); the data stays
    // in the received slices (or, for a piece of a request, is copied where it belongs).
    absl::Status parsed;
    const bool answer = Kind::Receive(pipeline_, read_buffer_, &assembly_, &item->state, &parsed);
    item->window_bytes = 2 * static_cast<int64_t>(read_buffer_.Length());
    read_buffer_.Clear();
    if (!answer) {  // A piece, held by the assembly (and its budget): read on.
      absl::MutexLock lock(&mu_);
      reading_ = false;
      MaybeReadLocked();
      return;
    }
    Item* raw = item.release();  // Owned by the write queue once completed.
    {
      absl::MutexLock lock(&mu_);
      reading_ = false;
      ++outstanding_;
      window_bytes_ += raw->window_bytes;
      MaybeReadLocked();
    }
    if (!parsed.ok()) return Complete(raw, parsed, {});
    Kind::Process(
        pipeline_, &raw->state, received, context_->deadline(),
        [ctx = context_] { return ctx->IsCancelled(); },
        [this, raw](absl::Status status, const Timing& timing) {
          Complete(raw, std::move(status), timing);
        });
  }

  void OnWriteDone(bool ok) override {
    std::unique_ptr<Item> written;  // Freed (and its budget released) after the unlock.
    absl::MutexLock lock(&mu_);
    Item& front = *writes_.front();
    // The rest of a response of several messages, unless the stream has failed.
    if (ok && ++front.written < front.responses.size()) {
      StartWrite(&front.responses[front.written]);
      return;
    }
    written = std::move(writes_.front());
    writes_.pop_front();
    writing_ = false;
    --outstanding_;
    window_bytes_ -= written->window_bytes;
    if (!writes_.empty()) WriteNextLocked();
    MaybeReadLocked();
    MaybeFinishLocked();
  }

  void OnDone() override {
    if (admitted_) pipeline_->CloseStream();
    delete this;
  }

 private:
  struct Item {
    typename Kind::State state;
    std::vector<grpc::ByteBuffer> responses;  // written in order
    size_t written = 0;                       // of responses
    int64_t window_bytes = 0;                 // counted against kStreamWindowBytes until written
  };

  // The client has closed its side (or the stream failed): answers the requests left
  // incomplete, then finishes once everything is written.
  void OnReadsDone() {
    std::vector<std::pair<Item*, absl::Status>> unfinished;
    while (true) {
      auto item = std::make_unique<Item>();
      absl::Status status;
      if (!Kind::TakeUnfinished(&assembly_, &item->state, &status)) break;
      unfinished.emplace_back(item.release(), std::move(status));
    }
    {
      absl::MutexLock lock(&mu_);
      reading_ = false;
      reads_done_ = true;
      outstanding_ += static_cast<int>(unfinished.size());  // Finishing waits for them.
      MaybeFinishLocked();
    }
    for (auto& [raw, status] : unfinished) Complete(raw, std::move(status), {});
  }

  // Encodes `raw`'s response and queues it for writing.
  void Complete(Item* raw, absl::Status status, const Timing& timing) {
    pipeline_->metrics().Record(rpc_, status, timing, Kind::InputBytes(raw->state));
    if (status.ok()) {
      auto encoded = Kind::Encode(raw->state, timing);
      if (!encoded.ok()) {
        status = encoded.status();
      } else if constexpr (std::is_same_v<std::decay_t<decltype(*encoded)>, grpc::ByteBuffer>) {
        raw->responses.push_back(std::move(*encoded));
      } else {
        raw->responses = std::move(*encoded);
      }
    }
    if (!status.ok()) {
      raw->responses.clear();
      raw->responses.push_back(Kind::EncodeError(raw->state, status));
      raw->state = typename Kind::State();  // Only the small error waits to be written.
    }
    absl::MutexLock lock(&mu_);
    writes_.emplace_back(raw);
    if (!writing_) WriteNextLocked();
  }

  void MaybeReadLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (reads_done_ || reading_ || finished_ || outstanding_ >= kMaxOutstandingPerStream ||
        window_bytes_ >= kStreamWindowBytes) {
      return;
    }
    reading_ = true;
    StartRead(&read_buffer_);
  }
  void WriteNextLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    writing_ = true;
    StartWrite(&writes_.front()->responses.front());
  }
  void MaybeFinishLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (reads_done_ && outstanding_ == 0 && !writing_ && !finished_) {
      finished_ = true;
      Finish(grpc::Status::OK);
    }
  }

  Pipeline* const pipeline_;
  Metrics::Rpc* const rpc_;
  grpc::CallbackServerContext* const context_;
  const bool admitted_;  // holds one of the service's open-stream slots
  grpc::ByteBuffer read_buffer_;
  typename Kind::Assembly assembly_;  // only the read in progress touches it
  absl::Mutex mu_;
  std::deque<std::unique_ptr<Item>> writes_ ABSL_GUARDED_BY(mu_);  // front: write in progress
  int outstanding_ ABSL_GUARDED_BY(mu_) = 0;                       // read and not yet written
  int64_t window_bytes_ ABSL_GUARDED_BY(mu_) = 0;                  // of the outstanding items
  bool reading_ ABSL_GUARDED_BY(mu_) = false;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool reads_done_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace myops::server
