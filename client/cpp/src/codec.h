// Conversion between the client's plain types and the myops.v1 protobuf messages. The only
// code of the client that reads or writes message fields; client.cc and
// stream_session.cc call it around the RPCs.
#ifndef MYOPS_CLIENT_SRC_CODEC_H_
#define MYOPS_CLIENT_SRC_CODEC_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "myops/client/results.h"
#include "myops/client/tensor.h"
#include "myops/v1/myops.pb.h"

namespace myops::client::internal {

// ValidateTensorView(input, "input") plus the client's message size limit:
// InvalidArgumentError when the input cannot make a request this client may send.
absl::Status ValidateInput(const TensorView& input, int max_message_bytes);

// Fills `request` (reusing its buffers) with a copy of the input's bytes. `input` must
// have passed ValidateInput.
void EncodeRequest(const TensorView& input, double alpha, double beta, const std::string& device,
                   uint64_t request_id, myops::v1::ScaleShiftRequest* request);

Timing DecodeTiming(const myops::v1::Timing& timing);

// Moves the output tensor out of `response`. InternalError when the server's tensor is
// malformed or (with `expected` non-null) its dtype or shape differ from `expected`'s.
absl::StatusOr<ScaleShiftResult> TakeResult(myops::v1::ScaleShiftResponse* response,
                                            const TensorView* expected);

// Copies the output tensor of `response` into `out` (validated by the caller), after
// checking it has out's dtype, shape and size (InternalError otherwise).
absl::Status CopyOutput(const myops::v1::ScaleShiftResponse& response,
                        const MutableTensorView& out);

// A stream response: its request_id and result, or the error of that request.
StreamResult TakeStreamResult(myops::v1::ScaleShiftStreamResponse* response);

ServerInfo DecodeServerInfo(const myops::v1::ServerInfoResponse& response);

}  // namespace myops::client::internal

#endif  // MYOPS_CLIENT_SRC_CODEC_H_
