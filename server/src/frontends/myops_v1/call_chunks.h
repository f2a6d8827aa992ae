// Chunked tensors on myops.v1 CallStream (Tensor.chunked_byte_size, TensorChunk): a
// request's tensors too large for one message arrive in pieces after its header and are
// reassembled into buffers of their own, reserved from the memory budget in full when
// the header arrives; results too large for one message go back the same way. The
// protocol's rules are in proto/myops/v1/myops.proto (CallStream). Protobuf side, no
// torch.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include <grpcpp/support/byte_buffer.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "myops/v1/myops.pb.h"
#include "pipeline/memory_budget.h"
#include "runtime/tensor_view.h"
#include "runtime/value.h"

namespace myops::server {

// Chunked requests unfinished at once on one stream; a header beyond them gets
// RESOURCE_EXHAUSTED.
inline constexpr int kMaxChunkedPerStream = 4;
// Refused chunked requests (their header failed) whose remaining chunks a stream drops
// silently; beyond this many the oldest is forgotten (its chunks then get errors).
inline constexpr int kMaxDroppedPerStream = 64;
// The smallest CallRequest.max_response_message_bytes accepted (0 aside).
inline constexpr uint64_t kMinResponseMessageBytes = 4096;

// A request's chunked tensors: one buffer each, in order of appearance, and the budget
// they hold. Owned by the request's state; DecodeArguments takes them in order.
struct ChunkedTensors {
  struct Buffer {
    std::unique_ptr<uint8_t[]> data;
    int64_t bytes = 0;
    int64_t received = 0;
  };
  std::vector<Buffer> tensors;
  BudgetReservation reservation;
  size_t next = 0;  // the next one DecodeArguments takes
};

// The sizes of `request`'s chunked tensors in order of appearance, each checked as
// DecodeTensorHead does (dtype, shape, max_elements, chunked_byte_size equal to numel *
// itemsize; not max_bytes: the memory budget bounds them), and their total. Empty when
// there are none. INVALID_ARGUMENT naming the argument when one is malformed, has data
// too, or the total overflows.
struct ChunkedSizes {
  std::vector<int64_t> bytes;
  int64_t total = 0;
};
absl::StatusOr<ChunkedSizes> FindChunkedTensors(const myops::v1::CallRequest& request,
                                                const TensorLimits& limits);

// The sum of `request`'s chunked_byte_size fields, unchecked (saturating): what its
// client will send in chunks, valid or not.
uint64_t AnnouncedChunkedBytes(const myops::v1::CallRequest& request);

// The view of chunked tensor `t` (chunked_byte_size set): the next buffer of `chunks`
// (null: INVALID_ARGUMENT, chunked tensors travel on CallStream only), checked as
// DecodeTensor checks data.
absl::StatusOr<TensorView> DecodeChunkedTensor(const myops::v1::Tensor& t, const std::string& field,
                                               const TensorLimits& limits, ChunkedTensors* chunks);

// Whether `bytes` is a chunk message (a CallRequest whose first field is `chunk`).
bool IsChunkMessage(const grpc::ByteBuffer& bytes);

// One stream's chunked requests whose chunks have not all arrived, and those refused
// whose chunks it drops. Used by the stream's one read in progress at a time (not
// thread-safe); what it holds is released when it is destroyed.
class ChunkAssembly {
 public:
  using ReserveFn = std::function<absl::Status(int64_t, BudgetReservation*)>;
  // `reserve` takes budget (RESOURCE_EXHAUSTED when it does not fit).
  ChunkAssembly(TensorLimits limits, ReserveFn reserve)
      : limits_(limits), reserve_(std::move(reserve)) {}

  // A request as it was when its header came, and its chunked tensors once complete.
  struct Request {
    myops::v1::CallRequest request;
    BudgetReservation header;  // what the header's parse holds
    int64_t received_bytes = 0;
    ChunkedTensors chunks;
  };

  // A header with chunked tensors (`sizes`, from FindChunkedTensors): reserves their
  // total and allocates their buffers. On an error (RESOURCE_EXHAUSTED for the budget or
  // too many unfinished requests, INVALID_ARGUMENT for an id already unfinished) the
  // request is refused and its chunks will be dropped.
  absl::Status Start(Request request, const ChunkedSizes& sizes);

  // A header refused before Start (its chunked tensors malformed, say): drops the next
  // `bytes` bytes of chunks of request `id`, which its client may send all the same, so
  // that they are not each answered with an error. Nothing when `id` is in use.
  void Refuse(uint64_t id, uint64_t bytes);

  // A chunk message. kConsumed: taken (or dropped); kComplete: it completed `*done`;
  // kFailed: `*error` is the error of request `*id` (the chunk's, 0 when the message is
  // not one), whose remaining chunks are then dropped.
  enum class Added { kConsumed, kComplete, kFailed };
  Added Add(const grpc::ByteBuffer& bytes, Request* done, uint64_t* id, absl::Status* error);

  // Once the client has closed its side: takes an unfinished request, its id and its
  // error; false when none is left.
  bool TakeUnfinished(uint64_t* id, absl::Status* error);

  int unfinished() const { return unfinished_; }

 private:
  struct Entry {
    std::unique_ptr<Request> request;  // null: refused, its chunks dropped
    size_t tensor = 0;                 // the tensor the next chunk is for
    int64_t remaining = 0;             // bytes still to come, in all
    uint64_t order = 0;                // when it was refused
  };
  void Drop(uint64_t id, Entry* entry);

  const TensorLimits limits_;
  const ReserveFn reserve_;
  std::map<uint64_t, Entry> entries_;
  int unfinished_ = 0;
  int dropped_ = 0;
  uint64_t refusals_ = 0;
};

// The data bytes of each result chunk message of a response limited to `limit` bytes.
int64_t ResultChunkDataBytes(uint64_t limit);

// What one result chunk message holds besides its data (the message's buffer, its slices
// and the reference to the result's memory), reserved with the results
// (CallState::result_piece_overhead_bytes). Measured by call_chunks_test, which fails
// when a message holds more.
inline constexpr int64_t kResultChunkMessageBytes = 1024;

// A CallStream response larger than `limit` bytes, as messages: `response` (a
// CallStreamResponse as EncodeCallStreamResponse wrote it with `chunked` result tensors),
// then the chunks of those tensors (slices of their memory, held by their owners), each
// message at most `limit` bytes.
std::vector<grpc::ByteBuffer> EncodeResultChunks(grpc::ByteBuffer response, uint64_t request_id,
                                                 const std::vector<TensorView>& chunked,
                                                 uint64_t limit);

}  // namespace myops::server
