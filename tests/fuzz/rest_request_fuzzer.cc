// Fuzz target: the Open Inference Protocol's REST request body, as POST .../infer reads
// it: the first input byte chooses whether an Inference-Header-Content-Length header is
// sent and (with the next two) its value; the rest is the body. SplitBody, then
// ParseInferRequestJson with the default limits, then InferArguments for an operator
// taking a tensor, a float, an int list, a ScalarType and a str, then the response
// encoding of the accepted inputs echoed as outputs. Beyond "no crash, no sanitizer
// report", checks what the front end relies on: refusals are INVALID_ARGUMENT; data
// copied from JSON takes at most 8 bytes per byte of JSON (nothing is allocated from a
// shape alone), binary data at most the binary part again; every input's data is aligned
// to its datatype's size (a view inside the body, or a copy where the body misaligns it)
// and holds count * size bytes with count the product of its shape; the response's JSON
// parses.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>

#include "frontends/oip/rest/json.h"
#include "fuzz_op.h"

namespace {

[[noreturn]] void Fail(const char* what) {
  fprintf(stderr, "fuzz property violated: %s\n", what);
  __builtin_trap();
}

namespace k = myops::server::kserve;
using myops::server::ArgKind;

const myops::server::OpInfo& Op() {
  static const myops::server::OpInfo op = myops::fuzz::FuzzOp({{"x", ArgKind::kTensor},
                                                               {"alpha", ArgKind::kFloat},
                                                               {"sizes", ArgKind::kIntList},
                                                               {"dtype", ArgKind::kScalarType},
                                                               {"text", ArgKind::kString}},
                                                              {{"", ArgKind::kTensor}});
  return op;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  if (size < 3) return 0;
  const bool with_header = bytes[0] & 1;
  const std::string header = std::to_string(bytes[1] | (bytes[2] << 8));
  const absl::string_view body(reinterpret_cast<const char*>(bytes + 3), size - 3);
  auto parts =
      k::SplitBody(body, with_header ? std::optional<absl::string_view>(header) : std::nullopt);
  if (!parts.ok()) {
    if (parts.status().code() != absl::StatusCode::kInvalidArgument) Fail("SplitBody's code");
    return 0;
  }
  k::RestInferRequest request;
  const absl::Status status =
      k::ParseInferRequestJson("fuzz::op", *parts, myops::server::TensorLimits{}, &request);
  if (!status.ok()) {
    if (status.code() != absl::StatusCode::kInvalidArgument) Fail("a refusal's code");
    return 0;
  }
  if (request.input_shm.size() != request.inputs.size() ||
      request.output_shm.size() != request.outputs.size()) {
    Fail("shared memory parameters not indexed like the tensors");
  }
  size_t copied = 0;
  bool in_regions = false;
  std::vector<k::OutputTensor> echoed;
  for (size_t i = 0; i < request.inputs.size(); ++i) {
    const k::InputTensor& in = request.inputs[i];
    int64_t numel = 1;
    for (int64_t d : in.shape) numel *= d;
    if (!request.input_shm[i].empty()) {  // no data until the front end resolves its region
      if (numel != in.count || in.data != nullptr) Fail("a region input's count or data");
      in_regions = true;
      continue;
    }
    if (numel != in.count || in.stride != in.type->size) Fail("count or stride");
    const char* data = static_cast<const char*>(in.data);
    const size_t n = static_cast<size_t>(in.count * in.type->size);
    const bool in_body = data >= body.data() && data + n <= body.data() + body.size();
    if (!in_body) copied += n;
    if (n > 0 && data == nullptr) Fail("no data");
    if (n > 0 && reinterpret_cast<uintptr_t>(data) % static_cast<uintptr_t>(in.type->size) != 0) {
      Fail("a misaligned input");
    }
    k::OutputTensor out;
    out.name = in.name;
    out.type = in.type;
    out.shape = in.shape;
    out.is_tensor = true;
    out.tensor_data = in.data;
    out.tensor_bytes = static_cast<int64_t>(n);
    echoed.push_back(std::move(out));
  }
  // JSON data takes at most 8 bytes per byte; binary data at most itself again (aligned
  // copies of inputs the body misaligns).
  if (copied > 8 * parts->json.size() + parts->binary.size()) {
    Fail("copies cost more than 8 bytes per byte of JSON plus the binary part");
  }
  if (!in_regions) {
    auto args = k::InferArguments(Op(), &request);
    if (!args.ok() && args.status().code() != absl::StatusCode::kInvalidArgument) {
      Fail("InferArguments's code");
    }
  }
  request.outputs.clear();  // every echoed output, by binary_data_output
  request.output_binary.clear();
  request.output_shm.clear();
  if (k::JsonResponseBytes(request, echoed) < 0) Fail("a negative response estimate");
  const k::RestInferResponse response = k::EncodeInferResponseJson("fuzz::op", request, echoed);
  if (!nlohmann::json::accept(response.json)) Fail("the response is not JSON");
  return 0;
}
