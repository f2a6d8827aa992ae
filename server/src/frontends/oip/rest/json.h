// The Open Inference Protocol's HTTP/REST binding: inference request and response bodies
// as JSON (nlohmann::json), with the binary tensor data extension (a JSON header of
// Inference-Header-Content-Length bytes, then the tensors' raw bytes). Requests become
// the same InputTensor/Parameter values the gRPC binding produces, so frontends/oip/args.h's
// rules apply to both. Neither torch nor protobuf.
//
// Untrusted bytes: nesting deeper than kMaxJsonDepth is refused before parsing, element
// counts are checked against the shape and TensorLimits before data is allocated, and
// the parsed document takes at most kJsonBytesPerByte bytes per byte of JSON (what the
// front end reserves from the memory budget before reading the body).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>
#include "absl/strings/string_view.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "frontends/oip/args.h"
#include "frontends/oip/binding.h"

namespace myops::server::kserve {

inline constexpr int kMaxJsonDepth = 64;
// Bound on memory per byte of JSON text while a request is parsed and decoded: a
// nlohmann::json value is 16 bytes, an element takes at least 2 bytes of text ("0,"), an
// array's vector may hold twice its size while it grows, and the decoded element takes up
// to 8 bytes.
inline constexpr int64_t kJsonBytesPerByte = 24;

// A request body split at its JSON header's end: `binary` is empty without the binary
// extension.
struct BodyParts {
  absl::string_view json;
  absl::string_view binary;
};

// Splits `body` by the value of its Inference-Header-Content-Length header (nullopt:
// absent, all JSON). INVALID_ARGUMENT when the value is not a decimal number of at most
// body.size().
absl::StatusOr<BodyParts> SplitBody(absl::string_view body,
                                    std::optional<absl::string_view> header_length);

// A parsed inference request. Inputs point into the body's binary part (which must
// outlive them) or into `scratch` (data sent as JSON, copied as the datatype's bytes).
struct RestInferRequest : InferRequest {
  std::string id;
  // Each requested output's binary_data parameter, and the request's binary_data_output
  // (not among `parameters`). An input whose shared memory parameters name a region has
  // no data yet: BindInfer points it into its region.
  std::vector<std::optional<bool>> output_binary;
  bool binary_data_output = false;
};

// Parses the body of POST /v2/models/{model}/infer: the JSON inference request (inputs
// with name, shape, datatype, and data, flat or nested, or a binary_data_size parameter
// taking the next bytes of `body.binary`), id, parameters and outputs. INVALID_ARGUMENT,
// naming the input and the model `model`, for invalid JSON, a missing or mistyped field,
// an unknown datatype, data that does not match the shape and datatype, a tensor over
// `limits`, or binary data whose sizes do not add up to the binary part. Binary inputs
// are views into `body.binary`, or aligned copies in out->scratch where the body puts
// them at an address that is not a multiple of their datatype's size (at most the
// binary part again, which the front end reserves).
absl::Status ParseInferRequestJson(const std::string& model, BodyParts body,
                                   const TensorLimits& limits, RestInferRequest* out);

// A response body: `json` then the bytes of `binary` in order (views of the outputs,
// valid while they are). `binary` empty: the body is `json` alone.
struct RestInferResponse {
  std::string json;
  std::vector<absl::string_view> binary;
  int64_t binary_bytes = 0;
};

// The inference response for `outputs`: each as JSON `data` (FP16 and BF16 as numbers,
// BYTES as a string, non-finite floats as null) or, where the request asked for binary
// data (the output's binary_data parameter, else binary_data_output), as a
// binary_data_size parameter and its bytes after the JSON.
RestInferResponse EncodeInferResponseJson(const std::string& model, const RestInferRequest& request,
                                          const std::vector<OutputTensor>& outputs);

// Bound on the memory EncodeInferResponseJson takes for one element sent as JSON data:
// a nlohmann::json value (16 bytes) and its text (at most 25 characters and a comma),
// with room for the array's growth.
inline constexpr int64_t kJsonBytesPerOutputElement = 64;

// The memory EncodeInferResponseJson takes beyond the outputs themselves (the outputs
// sent as JSON data), for the front end to reserve from the budget before encoding.
int64_t JsonResponseBytes(const RestInferRequest& request,
                          const std::vector<OutputTensor>& outputs);

// {"error": "<message>"}.
std::string ErrorJson(absl::string_view message);

}  // namespace myops::server::kserve
