// The protobuf wire format of the myops.v1 messages that carry one Tensor
// (ScaleShiftRequest.input, ScaleShiftResponse.output), written and read by hand so that
// the tensor's data bytes never pass through a protobuf `bytes` field:
//  - EncodeWithTensorData puts a given slice into the message as the data, uncopied;
//  - ParseWithTensorData leaves the data in the received slices (TensorData) and parses
//    every other field with protobuf itself; ParseWithDataField does the same for the
//    values of a repeated bytes field (inference.ModelInferRequest.raw_input_contents).
// Copying data out of the slices (CopyTo) is the one gather of received tensor bytes.
// The bytes are exactly protobuf's encoding, so peers using generated code interoperate.
// Shared by the server (its unary responses) and the C++ client (its unary calls).
#ifndef MYOPS_WIRE_TENSOR_WIRE_H_
#define MYOPS_WIRE_TENSOR_WIRE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <google/protobuf/message_lite.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/slice.h>

#include "absl/status/status.h"
#include "myops/v1/myops.pb.h"

namespace myops::wire {

// Appends `value` as a base-128 varint.
void AppendVarint(uint64_t value, std::string* out);

// All bytes of `buffer` in one string (a copy: for small messages and tests). False when
// gRPC cannot read the buffer.
bool Flatten(const grpc::ByteBuffer& buffer, std::string* out);

// The slices of a received message, held for views into them (TensorData,
// DataFieldValues). The last references to them are dropped by a grpc::ByteBuffer, whose
// destruction (grpc_byte_buffer_destroy) runs inside a gRPC ExecCtx, and never by
// grpc::Slice's destructor: gRPC 1.51's grpc_slice_unref frees a slice right on the
// calling thread, and a slice of the resource quota's memory then returns its bytes to
// the quota, which under memory pressure wakes the quota's reclaimer with ExecCtx::Run, a
// null dereference on a thread without an ExecCtx (the server's callback threads and CPU
// workers have none). Move-only; moving keeps the slices where they are.
class ReceivedSlices {
 public:
  ReceivedSlices() = default;
  ReceivedSlices(ReceivedSlices&& other) noexcept { Swap(&other); }
  ReceivedSlices& operator=(ReceivedSlices&& other) noexcept {
    ReceivedSlices old;  // this one's slices, released as the destructor releases them
    Swap(&old);
    Swap(&other);
    return *this;
  }
  ReceivedSlices(const ReceivedSlices&) = delete;
  ReceivedSlices& operator=(const ReceivedSlices&) = delete;
  ~ReceivedSlices() { slices_.clear(); }  // then owner_ drops the last references

  // Refers to `bytes`' slices, uncopied (what held before is released). False when gRPC
  // cannot read the buffer.
  bool Refer(const grpc::ByteBuffer& bytes);
  const std::vector<grpc::Slice>& slices() const { return slices_; }

 private:
  void Swap(ReceivedSlices* other) noexcept {
    slices_.swap(other->slices_);
    owner_.Swap(&other->owner_);
  }
  grpc::ByteBuffer owner_;  // a reference to the received buffer (no bytes copied)
  std::vector<grpc::Slice> slices_;
};

// The data bytes of a parsed Tensor: spans of the received slices, which it keeps
// alive. Immutable once parsed; safe to read from several threads. Move-only: spans may
// point into the inline storage of its own slices, which a copy would not own.
class TensorData {
 public:
  TensorData() = default;
  TensorData(TensorData&&) = default;
  TensorData& operator=(TensorData&&) = default;
  TensorData(const TensorData&) = delete;
  TensorData& operator=(const TensorData&) = delete;

  size_t size() const { return size_; }
  // The bytes when they lie in a single span (or are empty), else nullptr.
  const uint8_t* contiguous() const;
  // Copies all size() bytes to `dst` (large copies bypass the caches: see CopySpans).
  void CopyTo(void* dst) const;
  // Appends all size() bytes to `out` (one pass: no zero-filled resize first).
  void AppendTo(std::string* out) const;

 private:
  friend absl::Status ParseWithTensorData(const grpc::ByteBuffer&, int,
                                          google::protobuf::MessageLite*, TensorData*);
  ReceivedSlices slices_;
  std::vector<std::pair<const uint8_t*, size_t>> spans_;
  size_t size_ = 0;
};

// The message whose field `tensor_field` is a Tensor with `head`'s dtype and shape and
// with `data` as its data, followed by `rest`'s fields. `head` must have no data and
// `rest` must not set field `tensor_field`. `data` is referenced, not copied.
grpc::ByteBuffer EncodeWithTensorData(int tensor_field, const myops::v1::Tensor& head,
                                      const grpc::Slice& data,
                                      const google::protobuf::MessageLite& rest);

// The most bytes a parsed message may have besides its tensor's data: every other field,
// known or unknown, and the tensor's own dtype and shape. A real request's head is well
// under 1 KiB; the cap keeps a crafted message (thousands of unknown fields or shape
// entries) from costing more memory than the bytes it arrived in.
inline constexpr size_t kMaxHeadBytes = 64 << 10;

// Parses `bytes` into `message` (cleared first), except the data of its Tensor field
// `tensor_field`, which is left empty in `message` and described by `data` instead.
// Protobuf's merge rules hold (a repeated tensor field merges; the last data wins).
// Accepts exactly what protobuf's own parser accepts, except a message whose head
// exceeds kMaxHeadBytes. Errors: INVALID_ARGUMENT, saying which of the two it was;
// `data` is then empty. Allocates at most kMaxHeadBytes plus protobuf's parse of them,
// and references (does not copy) the data.
absl::Status ParseWithTensorData(const grpc::ByteBuffer& bytes, int tensor_field,
                                 google::protobuf::MessageLite* message, TensorData* data);

// The values of a repeated bytes field of a parsed message (ParseWithDataField), left in
// the received slices, which it keeps alive: one entry per value, in order. Immutable once
// parsed; safe to read from several threads. Move-only, as TensorData.
class DataFieldValues {
 public:
  DataFieldValues() = default;
  DataFieldValues(DataFieldValues&&) = default;
  DataFieldValues& operator=(DataFieldValues&&) = default;
  DataFieldValues(const DataFieldValues&) = delete;
  DataFieldValues& operator=(const DataFieldValues&) = delete;

  size_t count() const { return values_.size(); }
  size_t size(size_t i) const { return values_[i].bytes; }
  // Copies value `i`'s size(i) bytes to `dst` (large copies bypass the caches). Decoding
  // always copies: a view would pin gRPC's read buffers for the call's life.
  void CopyTo(size_t i, void* dst) const;

 private:
  friend absl::Status ParseWithDataField(const grpc::ByteBuffer&, int,
                                         google::protobuf::MessageLite*, DataFieldValues*);
  struct Value {
    size_t first_span = 0;
    size_t spans = 0;
    size_t bytes = 0;
  };
  ReceivedSlices slices_;
  std::vector<std::pair<const uint8_t*, size_t>> spans_;  // every value's, back to back
  std::vector<Value> values_;
};

// Parses `bytes` into `message` (cleared first), except the values of its top-level
// repeated bytes field `data_field`, which `values` describes instead, in order; `message`
// holds none of them. Every other field is parsed by protobuf from the received slices
// (referenced, not copied first), so that the message may carry large fields of its own
// (packed typed contents). Accepts what protobuf's parser accepts (a `data_field` of
// another wire type is an unknown field to both), except unknown groups whose bytes
// exceed kMaxHeadBytes. INVALID_ARGUMENT when it does not parse; `values` is then
// empty. Allocates the slice list, a span per piece of each value, and protobuf's parse
// of the other fields; the data itself is referenced.
absl::Status ParseWithDataField(const grpc::ByteBuffer& bytes, int data_field,
                                google::protobuf::MessageLite* message, DataFieldValues* values);

}  // namespace myops::wire

#endif  // MYOPS_WIRE_TENSOR_WIRE_H_
