// The bidirectional streaming RPCs' reactor (ScaleShiftStream, CallStream, and the Open
// Inference Protocol's ModelStreamInfer): pipelined requests on one stream, bounded
// read-ahead, responses written in completion order, an end to streams that hold memory
// for a client that makes no progress. Private to the front ends.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include <grpcpp/alarm.h>
#include <grpcpp/server_context.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/server_callback.h>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
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
// OnDone, or, when its stall alarm is set then, in the alarm's callback (which gRPC runs
// once, cancelled or not). mu_ guards what is annotated so; pipeline_, rpc_, context_ and
// admitted_ are fixed, and read_buffer_ and assembly_ belong to the one read in progress.
//
// Stalls (ServiceLimits::stall_timeout_ms): while the assembly holds an unfinished
// request, each chunk must come within the timeout of the last; while a response is
// being written, the client must take it within the timeout. Otherwise the stream ends
// (DEADLINE_EXCEEDED when nothing else is in flight, else cancelled) and what it held
// returns to the memory budget.
//
// `Kind` supplies every step of its RPC (ScaleShiftStream in myops_v1/service.cc,
// CallStream in myops_v1/call_service.cc, ModelStreamInfer in oip/grpc/service.cc):
//  - `State`: one request's state, default-constructible;
//  - `Assembly`, made per stream by `static Assembly MakeAssembly(Pipeline*, account)`
//    (the stream's ClientAccount, which its reservations count against) and used
//    only by the one read in progress: what a request of several messages (CallStream's
//    chunked tensors) keeps between them;
//  - `static bool Receive(Pipeline*, const grpc::ByteBuffer&, Assembly*, State*,
//    absl::Status* parsed)`: one message; false when it completed no request;
//  - `static bool TakeUnfinished(Assembly*, State*, absl::Status*)`: once the client has
//    closed its side, one request left incomplete to answer (false: none left);
//  - `static int Unfinished(const Assembly&)`: requests begun and not complete;
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
  static Assembly MakeAssembly(Pipeline*, const std::shared_ptr<ClientAccount>&) { return {}; }
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
  static int Unfinished(const Assembly&) { return 0; }
};

template <typename Kind>
class StreamReactor final : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  // Takes one of `pipeline`'s open-stream slots (RESOURCE_EXHAUSTED when none is free);
  // records each request in `rpc`'s metrics. `client`: who opened the stream (its
  // tenant, CallState::client of every request).
  StreamReactor(Pipeline* pipeline, Metrics::Rpc* rpc, grpc::CallbackServerContext* context,
                std::string client)
      : pipeline_(pipeline),
        rpc_(rpc),
        context_(context),
        client_(std::move(client)),
        account_(pipeline->AccountOf(client_, context->peer())),
        admitted_(pipeline->TryOpenStream()),
        assembly_(Kind::MakeAssembly(pipeline, account_)) {
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
    item->state.client = client_;
    item->state.account = account_;
    // Bounded work and memory, whatever the bytes (wire::kMaxHeadBytes); the data stays
    // in the received slices (or, for a piece of a request, is copied where it belongs).
    absl::Status parsed;
    const bool answer = Kind::Receive(pipeline_, read_buffer_, &assembly_, &item->state, &parsed);
    item->window_bytes = 2 * static_cast<int64_t>(read_buffer_.Length());
    read_buffer_.Clear();
    const int unfinished = Kind::Unfinished(assembly_);
    if (!answer) {  // A piece, held by the assembly (and its budget): read on.
      absl::MutexLock lock(&mu_);
      reading_ = false;
      AssemblyProgressLocked(unfinished, /*piece=*/true, received);
      MaybeReadLocked();
      return;
    }
    Item* raw = item.release();  // Owned by the write queue once completed.
    {
      absl::MutexLock lock(&mu_);
      reading_ = false;
      AssemblyProgressLocked(unfinished, /*piece=*/false, received);
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
    write_progress_ = std::chrono::steady_clock::now();
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
    {
      absl::MutexLock lock(&mu_);
      done_ = true;
      if (alarm_set_) {  // Its callback, which gRPC still runs, deletes this.
        alarm_->Cancel();
        return;
      }
    }
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
      item->state.client = client_;
      item->state.account = account_;
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

  // After a read: `unfinished` requests begun in the assembly; a piece of one (or a
  // change in their number) is progress for the stall watch.
  void AssemblyProgressLocked(int unfinished, bool piece,
                              std::chrono::steady_clock::time_point when)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (piece || unfinished != unfinished_) assembly_progress_ = when;
    unfinished_ = unfinished;
    MaybeSetAlarmLocked();
  }

  // Sets the stall alarm while the stream holds memory for its client, for when the
  // older of its waits would pass the timeout.
  void MaybeSetAlarmLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (alarm_set_ || done_ || finished_ || ((unfinished_ == 0 || !reading_) && !writing_)) return;
    std::chrono::steady_clock::time_point since = std::chrono::steady_clock::time_point::max();
    if (unfinished_ > 0 && reading_) since = ChunkWaitSince();
    if (writing_) since = std::min(since, write_progress_);
    const auto wait = since + StallTimeout() - std::chrono::steady_clock::now();
    alarm_ = std::make_unique<grpc::Alarm>();  // an earlier one has run its callback
    alarm_set_ = true;
    alarm_->Set(std::chrono::system_clock::now() +
                    std::chrono::duration_cast<std::chrono::system_clock::duration>(wait),
                [this](bool) { OnAlarm(); });
  }

  void OnAlarm() {
    bool cancel = false;
    {
      absl::MutexLock lock(&mu_);
      alarm_set_ = false;
      if (!done_) {
        if (!StallCheckLocked()) return;
        // Cancelling, after the unlock: the alarm counts as set until it is done, so that
        // an OnDone meanwhile (even one the cancel runs) leaves the delete to this.
        alarm_set_ = true;
        cancel = true;
      }
    }
    if (cancel) {
      context_->TryCancel();
      absl::MutexLock lock(&mu_);
      alarm_set_ = false;
      if (!done_) return;
    }
    delete this;
  }

  // At the alarm: ends a stalled stream (true: by cancelling it, after the unlock), or
  // sets the alarm for the waits that are left.
  bool StallCheckLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const auto now = std::chrono::steady_clock::now();
    const bool chunks_stalled =
        unfinished_ > 0 && reading_ && now - ChunkWaitSince() >= StallTimeout();
    const bool reader_stalled = writing_ && now - write_progress_ >= StallTimeout();
    if (finished_ || (!chunks_stalled && !reader_stalled)) {
      MaybeSetAlarmLocked();  // progress since: watch the rest
      return false;
    }
    pipeline_->metrics().StreamStalled();
    if (!writing_ && outstanding_ == 0) {
      // A read may be pending: it completes with ok=false, and OnDone follows.
      finished_ = true;
      Finish(grpc::Status(
          grpc::StatusCode::DEADLINE_EXCEEDED,
          absl::StrCat("no chunk of the unfinished chunked request(s) on this stream came for ",
                       pipeline_->limits().stall_timeout_ms,
                       " ms while they held memory (--stall-timeout-ms): the stream is "
                       "ended and the memory returned")));
      return false;
    }
    return true;  // a write or requests in flight: gRPC ends them
  }

  // Since when the stream has waited for a chunk: a read is pending (while it does not
  // read, for its own read-ahead limits, it is not waiting for its client).
  std::chrono::steady_clock::time_point ChunkWaitSince() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return std::max(assembly_progress_, read_started_);
  }

  std::chrono::steady_clock::duration StallTimeout() const {
    return std::chrono::milliseconds(pipeline_->limits().stall_timeout_ms);
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
    if (finished_) {  // Ended for a stall: nothing more is written.
      delete raw;
      --outstanding_;
      return;
    }
    writes_.emplace_back(raw);
    if (!writing_) WriteNextLocked();
  }

  void MaybeReadLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (reads_done_ || reading_ || finished_ || outstanding_ >= kMaxOutstandingPerStream ||
        window_bytes_ >= kStreamWindowBytes) {
      return;
    }
    reading_ = true;
    read_started_ = std::chrono::steady_clock::now();
    StartRead(&read_buffer_);
    MaybeSetAlarmLocked();
  }
  void WriteNextLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    writing_ = true;
    write_progress_ = std::chrono::steady_clock::now();
    StartWrite(&writes_.front()->responses.front());
    MaybeSetAlarmLocked();
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
  const std::string client_;
  const std::shared_ptr<ClientAccount> account_;
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
  // The stall watch: requests begun in the assembly (as of the last read), when the
  // assembly or the write in progress last moved and the pending read began, and the
  // alarm (set: its callback has not run yet).
  int unfinished_ ABSL_GUARDED_BY(mu_) = 0;
  std::chrono::steady_clock::time_point assembly_progress_ ABSL_GUARDED_BY(mu_);
  std::chrono::steady_clock::time_point write_progress_ ABSL_GUARDED_BY(mu_);
  std::chrono::steady_clock::time_point read_started_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<grpc::Alarm> alarm_ ABSL_GUARDED_BY(mu_);
  bool alarm_set_ ABSL_GUARDED_BY(mu_) = false;
  bool done_ ABSL_GUARDED_BY(mu_) = false;  // OnDone ran
};

}  // namespace myops::server
