// The protobuf wire format of the generic call messages (myops.v1.CallRequest,
// CallResponse), by hand where it matters:
//  - CheckCallRequestHead bounds what parsing a CallRequest can cost before protobuf
//    parses it: everything but its tensors' data (the head) must fit in kMaxHeadBytes,
//    so that crafted small fields (packed lists, thousands of tiny tensors) cannot make
//    the parsed message much larger than the bytes it arrived in;
//  - MessageWriter writes a message as a sequence of slices, large data slices referenced
//    rather than copied (a response's result tensors, a request's argument tensors).
#ifndef MYOPS_WIRE_CALL_WIRE_H_
#define MYOPS_WIRE_CALL_WIRE_H_

#include <cstdint>
#include <string>
#include <vector>

#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/slice.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "myops/v1/myops.pb.h"

namespace myops::wire {

// Messages up to this size are not walked by the head checks below (their head is within
// the bound): all of one is taken as head.
inline constexpr uint64_t kUnwalkedBytes = 4 << 10;

// The bytes of a CallRequest's head (every byte but tensor data) when `bytes` walks as a
// CallRequest (its arguments, their values, tensors and tensor lists; other fields are
// skipped by protobuf's rules) and its head is at most kMaxHeadBytes; INVALID_ARGUMENT
// saying which it was not. Reads, never copies data. A message of at most kUnwalkedBytes
// is not walked: its length is returned (protobuf's parse refuses it if it is not a
// CallRequest).
absl::StatusOr<uint64_t> CheckCallRequestHead(const grpc::ByteBuffer& bytes);

// What protobuf's parse of an inference.ModelInferRequest may make, from its wire form:
// its head (every byte but raw_input_contents' data and the data of its inputs' packed
// typed contents) and the arrays its packed contents become (elements x element size:
// at most one element per byte of varints, 8 bytes an int64).
struct InferRequestBytes {
  uint64_t head = 0;
  uint64_t packed_arrays = 0;
};

// The same check for an inference.ModelInferRequest (the Open Inference Protocol): its
// head at most kMaxHeadBytes. Returns its sizes (above). A message of at most
// kUnwalkedBytes is not walked: all of it is taken as head and as packed 1-byte varints
// of int64 contents.
absl::StatusOr<InferRequestBytes> CheckInferRequestHead(const grpc::ByteBuffer& bytes);

// Builds one protobuf message as slices. Not thread-safe; single use.
class MessageWriter {
 public:
  // Appends encoded fields (copied: keep them small).
  void AppendBytes(const std::string& encoded);
  // Appends the length-delimited field `field` holding `data` (referenced, not copied).
  void AppendData(int field, const grpc::Slice& data);
  // Appends `inner`'s message as the length-delimited field `field`.
  void AppendMessage(int field, MessageWriter inner);
  // Appends Tensor{dtype, shape, data} as field `field`, `head` holding dtype and shape.
  void AppendTensor(int field, const myops::v1::Tensor& head, const grpc::Slice& data);

  uint64_t size() const { return size_; }
  grpc::ByteBuffer Finish();

 private:
  void Flush();
  std::vector<grpc::Slice> slices_;
  std::string pending_;  // small fields, flushed as one slice before the next data slice
  uint64_t size_ = 0;
};

}  // namespace myops::wire

#endif  // MYOPS_WIRE_CALL_WIRE_H_
