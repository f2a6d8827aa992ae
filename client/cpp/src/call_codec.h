// The generic Call's wire bytes, written and read by hand so that tensor data is copied
// exactly once each way: a CallRequest is written straight into one send buffer of the
// pool (its tensors' data copied in, framing around it), and a CallResponse (or
// CallStreamResponse) is read from the received slices, each tensor's data copied once
// into its result Tensor while every other field is parsed by protobuf itself. The bytes
// are exactly protobuf's encoding (tests compare them with protobuf's serializer and
// parser), so peers using generated code interoperate.
#ifndef MYOPS_CLIENT_SRC_CALL_CODEC_H_
#define MYOPS_CLIENT_SRC_CALL_CODEC_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <grpcpp/support/byte_buffer.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "myops/client/results.h"
#include "myops/client/value.h"
#include "myops/v1/myops.pb.h"
#include "send_buffers.h"

namespace myops::client::internal {

// A tensor's bytes in a registered shared memory region (myops.v1.SharedMemoryRef).
struct RegionRef {
  absl::string_view region;  // empty: none
  uint64_t offset = 0;
  uint64_t byte_size = 0;
};

// Which of a call's tensors are in shared memory (shm_call.h places them), and where its
// result 0 may go (sent with inline_unfit_results, so a result that is no tensor or does
// not fit comes back inline). Borrows the region names.
struct CallPlacement {
  std::vector<std::pair<const void*, RegionRef>> tensors;  // by the tensor's data
  RegionRef result;

  // The region of tensor `t`; null: it travels inline.
  const RegionRef* Find(const TensorView& t) const {
    if (t.size_bytes == 0) return nullptr;
    for (const auto& [data, ref] : tensors) {
      if (data == t.data && ref.byte_size == t.size_bytes) return &ref;
    }
    return nullptr;
  }
};

// One call's fields, as the client's API takes them. Borrows everything.
struct CallFields {
  absl::string_view op;
  absl::Span<const Value> args;
  absl::Span<const NamedArg> kwargs;
  absl::string_view device;
  uint64_t request_id = 0;
  const CallPlacement* placement = nullptr;  // null: every tensor inline
  // CallStream only: tensors with data are announced (Tensor.chunked_byte_size) and sent
  // in chunks after the request (EncodeCallChunk), and results may come chunked in
  // messages of up to max_response_message_bytes (0: not).
  bool chunked = false;
  uint64_t max_response_message_bytes = 0;
};

// The region a response's tensors may be in: the call's lease (shm_pool.h). A region
// tensor naming another region, or bytes outside this one, is malformed.
struct ResponseRegion {
  absl::string_view name;
  char* data = nullptr;
  uint64_t size = 0;
  // Keeps the region mapped while the response is read, and, `in_place`, while the
  // result tensors left in it (Tensor::InMemoryOf) live; otherwise they are copied out.
  std::shared_ptr<void> owner;
  bool in_place = false;
};

// The region of a CallStream response's request (by request id); none: it has none.
using RegionOf = std::function<std::optional<ResponseRegion>(uint64_t request_id)>;

// The size of the CallRequest for `call` as encoded. Requires tensors whose size_bytes
// each fit in int64 (ValidateCall checks that first).
uint64_t EncodedCallSize(const CallFields& call);

// InvalidArgumentError naming the argument when `call` cannot make a request this client
// may send: an empty op or keyword, a keyword given twice, a tensor that fails
// ValidateTensorView, an unknown DType value, or an encoded size over max_message_bytes.
// `chunkable` (CallStream): only the request without its tensors' data must fit.
absl::Status ValidateCall(const CallFields& call, int max_message_bytes, bool chunkable = false);

// The CallRequest's wire bytes in one buffer of `pool` (tensor data copied in once).
// `call` must have passed ValidateCall.
grpc::ByteBuffer EncodeCallRequest(const CallFields& call, SendBufferPool& pool);

// The tensors with data of `call`, in the order the protocol numbers chunked tensors.
std::vector<TensorView> ChunkedTensors(const CallFields& call);

// CallRequest{chunk: TensorChunk{request_id, tensor_index, data: n bytes at `data`,
// offset}} in one buffer of `pool` (the bytes copied in once).
grpc::ByteBuffer EncodeCallChunk(uint64_t request_id, uint32_t tensor_index, uint64_t offset,
                                 const void* data, size_t n, SendBufferPool& pool);

// Parses a CallResponse. InternalError when the bytes are not one, or an output is
// malformed (no value, a tensor whose data does not match its dtype and shape, an unknown
// dtype).
// Tensors answered as region references (shared_memory) are copied out of `region`;
// without one they are malformed.
absl::StatusOr<CallResult> DecodeCallResponse(const grpc::ByteBuffer& bytes,
                                              const ResponseRegion* region = nullptr);

// Parses a CallStreamResponse: its request_id and result, the error of that request, or
// (request_id 0) InternalError when the bytes are malformed.
CallStreamResult DecodeCallStreamResponse(const grpc::ByteBuffer& bytes);

// A CallStreamResponse parsed, its tensors' data taken aside, before its result is taken.
struct ParsedStreamResponse {
  myops::v1::CallStreamResponse response;
  std::vector<std::string> data;
  bool ok = false;  // false: the bytes were malformed
};
ParsedStreamResponse ParseCallStreamResponse(const grpc::ByteBuffer& bytes);
// Its result (as DecodeCallStreamResponse's).
// Result tensors in shared memory are read from the region `region_of` gives.
CallStreamResult TakeCallStreamResult(const grpc::ByteBuffer& bytes, ParsedStreamResponse& parsed,
                                      const RegionOf& region_of = nullptr);
// Gives `tensor` (of parsed.response) `bytes` as its data, in place of chunked_byte_size.
void SetTensorData(ParsedStreamResponse& parsed, myops::v1::Tensor* tensor, std::string bytes);

// Decodes the CallStreamResponse in `*message`. When its result has chunked tensors,
// reads their chunks with `read_next` (which reads the stream's next message into
// `*message`; false once the stream has ended) and reassembles them (call_chunks.cc).
CallStreamResult ReceiveCallStreamResponse(grpc::ByteBuffer* message,
                                           const std::function<bool()>& read_next,
                                           const RegionOf& region_of = nullptr);

std::vector<OperatorDescription> DecodeOperators(const myops::v1::ListOperatorsResponse& response);

}  // namespace myops::client::internal

#endif  // MYOPS_CLIENT_SRC_CALL_CODEC_H_
