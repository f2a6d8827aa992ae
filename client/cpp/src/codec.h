// Conversion between the client's plain types and the myops.v1 messages: wire bytes for
// the unary RPC (the tensor data copied once each way, see myops/wire/tensor_wire.h) and
// protobuf messages for the stream. The only code of the client that reads or writes
// message fields; client.cc, async_call.cc and stream_session.cc call it around the RPCs.
#ifndef MYOPS_CLIENT_SRC_CODEC_H_
#define MYOPS_CLIENT_SRC_CODEC_H_

#include <cstdint>
#include <string>

#include <grpcpp/support/byte_buffer.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "myops/client/results.h"
#include "myops/client/tensor.h"
#include "myops/v1/myops.pb.h"
#include "send_buffers.h"

namespace myops::client::internal {

// The size of the request for `input` and these fields as encoded on the wire (the
// tensor's dtype, shape and data with their framing, then the other fields).
uint64_t EncodedRequestSize(const TensorView& input, double alpha, double beta,
                            const std::string& device, uint64_t request_id);

// ValidateTensorView(input, "input") plus the client's message size limit on the encoded
// request (EncodedRequestSize): InvalidArgumentError when the input cannot make a request
// this client may send.
absl::Status ValidateRequest(const TensorView& input, double alpha, double beta,
                             const std::string& device, uint64_t request_id, int max_message_bytes);

// The unary request's wire bytes. The input's bytes are copied once, into a buffer of
// `pool` that gRPC sends as is. `input` must have passed ValidateRequest.
grpc::ByteBuffer EncodeRequestBytes(const TensorView& input, double alpha, double beta,
                                    const std::string& device, SendBufferPool& pool);

// Parses a unary response, copying the output's bytes once out of the received slices.
// InternalError when the bytes are not a ScaleShiftResponse or its tensor is malformed
// or (with `expected` non-null) its dtype or shape differ from `expected`'s.
absl::StatusOr<ScaleShiftResult> DecodeResponseBytes(const grpc::ByteBuffer& response,
                                                     const TensorView* expected);

// As DecodeResponseBytes, but copies the output into `out` (validated by the caller),
// after checking it has out's dtype, shape and size, and returns the timing.
absl::StatusOr<Timing> DecodeResponseBytesInto(const grpc::ByteBuffer& response,
                                               const MutableTensorView& out);

// Stream requests: fills `request` (reusing its buffers) with a copy of the input's
// bytes. `input` must have passed ValidateRequest.
void EncodeRequest(const TensorView& input, double alpha, double beta, const std::string& device,
                   uint64_t request_id, myops::v1::ScaleShiftRequest* request);

Timing DecodeTiming(const myops::v1::Timing& timing);

// Moves the output tensor out of `response`. InternalError when the server's tensor is
// malformed or (with `expected` non-null) its dtype or shape differ from `expected`'s.
absl::StatusOr<ScaleShiftResult> TakeResult(myops::v1::ScaleShiftResponse* response,
                                            const TensorView* expected);

// A stream response: its request_id and result, or the error of that request.
StreamResult TakeStreamResult(myops::v1::ScaleShiftStreamResponse* response);

ServerInfo DecodeServerInfo(const myops::v1::ServerInfoResponse& response);

}  // namespace myops::client::internal

#endif  // MYOPS_CLIENT_SRC_CODEC_H_
