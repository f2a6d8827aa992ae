// Fuzz target: the C++ client's generic-call response decoder (client/cpp/src/
// call_decode.cc: DecodeCallResponse and DecodeCallStreamResponse over bytes received as
// several slices, see slices.h), differentially against protobuf's generated parser. A
// server is untrusted input to the client: every outcome must be a result or an
// InternalError (a stream's per-request error aside), never a crash or an allocation
// larger than the input. What the decoder accepts, protobuf must parse to the same values.
// Decoded once more with the call's shared memory region (kRegion): tensors that refer to
// it hold its bytes (copied out, and in place), any other reference is refused.
#include <cstring>
#include <memory>
#include <string>

#include "call_codec.h"
#include "myops/v1/myops.pb.h"
#include "slices.h"

namespace client = myops::client;
namespace v1 = myops::v1;

namespace {

// The region a decoded response may refer to ("r"), with recognizable bytes.
char kRegion[4096];
const client::internal::ResponseRegion* region_in_use = nullptr;

bool SameTensor(const client::TensorView& got, const v1::Tensor& want) {
  std::string expected = want.data();
  if (want.has_shared_memory()) {
    const v1::SharedMemoryRef& ref = want.shared_memory();
    if (region_in_use == nullptr || ref.region() != "r" || !want.data().empty() ||
        ref.offset() > sizeof kRegion || ref.byte_size() > sizeof kRegion - ref.offset()) {
      return false;  // The decoder must refuse references the call did not give.
    }
    expected.assign(kRegion + ref.offset(), ref.byte_size());
  }
  return static_cast<int>(got.dtype) == want.dtype() &&
         got.shape == std::vector<int64_t>(want.shape().begin(), want.shape().end()) &&
         got.size_bytes == expected.size() &&
         (got.size_bytes == 0 || std::memcmp(got.data, expected.data(), got.size_bytes) == 0) &&
         client::ValidateTensorView(got, "output").ok();
}

bool SameValue(const client::Value& got, const v1::Value& want) {
  using Kind = client::Value::Kind;
  switch (want.kind_case()) {
    case v1::Value::kTensor:
      return got.kind() == Kind::kTensor && SameTensor(got.tensor(), want.tensor());
    case v1::Value::kIntValue:
      return got.kind() == Kind::kInt && got.int_value() == want.int_value();
    case v1::Value::kFloatValue: {
      if (got.kind() != Kind::kFloat) return false;
      const double a = got.float_value(), b = want.float_value();
      return std::memcmp(&a, &b, sizeof a) == 0;
    }
    case v1::Value::kBoolValue:
      return got.kind() == Kind::kBool && got.bool_value() == want.bool_value();
    case v1::Value::kStringValue:
      return got.kind() == Kind::kString && got.string_value() == want.string_value();
    case v1::Value::kIntList:
      return got.kind() == Kind::kIntList &&
             got.int_list() == std::vector<int64_t>(want.int_list().values().begin(),
                                                    want.int_list().values().end());
    case v1::Value::kFloatList: {
      if (got.kind() != Kind::kFloatList) return false;
      const auto& v = want.float_list().values();
      return got.float_list().size() == static_cast<size_t>(v.size()) &&
             (v.empty() || std::memcmp(got.float_list().data(), v.data(), 8 * v.size()) == 0);
    }
    case v1::Value::kTensorList: {
      if (got.kind() != Kind::kTensorList) return false;
      const std::vector<client::TensorView> tensors = got.tensor_list();
      if (tensors.size() != static_cast<size_t>(want.tensor_list().tensors_size())) return false;
      for (size_t i = 0; i < tensors.size(); ++i) {
        if (!SameTensor(tensors[i], want.tensor_list().tensors(static_cast<int>(i)))) {
          return false;
        }
      }
      return true;
    }
    case v1::Value::kScalarType:
      return got.kind() == Kind::kScalarType &&
             static_cast<int>(got.scalar_type()) == want.scalar_type();
    case v1::Value::kNone:
      return got.kind() == Kind::kNone;
    case v1::Value::KIND_NOT_SET:
      break;
  }
  return false;  // The decoder must refuse an output without a value.
}

void CheckSame(const client::CallResult& got, const v1::CallResponse& want) {
  if (got.outputs.size() != static_cast<size_t>(want.outputs_size())) {
    myops::fuzz::Fail("a different number of outputs than protobuf parsed");
  }
  for (size_t i = 0; i < got.outputs.size(); ++i) {
    if (!SameValue(got.outputs[i], want.outputs(static_cast<int>(i)))) {
      myops::fuzz::Fail("an output differs from protobuf's parse");
    }
  }
  if (got.timing.total_ns != want.timing().total_ns() ||
      got.timing.device != want.timing().device()) {
    myops::fuzz::Fail("the timing differs from protobuf's parse");
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  for (size_t i = 0; i < sizeof kRegion; ++i) kRegion[i] = static_cast<char>(i * 7 + 1);
  return myops::fuzz::QuietProtobufLogs();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  myops::fuzz::SlicedInput input = myops::fuzz::SplitIntoSlices(bytes, size);

  absl::StatusOr<client::CallResult> result = client::internal::DecodeCallResponse(input.buffer);
  if (!result.ok() && result.status().code() != absl::StatusCode::kInternal) {
    myops::fuzz::Fail("DecodeCallResponse failed with a code other than INTERNAL");
  }
  if (result.ok()) {
    v1::CallResponse reference;
    if (!reference.ParseFromString(input.message)) {
      myops::fuzz::Fail("DecodeCallResponse accepted what protobuf refuses");
    }
    CheckSame(*result, reference);
    if (result->request_id != reference.request_id()) myops::fuzz::Fail("request_id differs");
  }
  for (bool in_place : {false, true}) {
    client::internal::ResponseRegion region{"r", kRegion, sizeof kRegion, nullptr, false};
    region.owner = std::make_shared<int>(0);
    region.in_place = in_place;
    absl::StatusOr<client::CallResult> with_region =
        client::internal::DecodeCallResponse(input.buffer, &region);
    if (!with_region.ok() && with_region.status().code() != absl::StatusCode::kInternal) {
      myops::fuzz::Fail(
          "DecodeCallResponse (with a region) failed with a code other than INTERNAL");
    }
    if (with_region.ok()) {
      v1::CallResponse reference;
      if (!reference.ParseFromString(input.message)) {
        myops::fuzz::Fail("DecodeCallResponse (with a region) accepted what protobuf refuses");
      }
      region_in_use = &region;
      CheckSame(*with_region, reference);
      region_in_use = nullptr;
    }
  }

  client::CallStreamResult stream = client::internal::DecodeCallStreamResponse(input.buffer);
  v1::CallStreamResponse reference;
  const bool parsed = reference.ParseFromString(input.message);
  if (stream.result.ok()) {
    if (!parsed || !reference.has_response()) {
      myops::fuzz::Fail("DecodeCallStreamResponse accepted what protobuf does not parse as one");
    }
    CheckSame(*stream.result, reference.response());
    if (stream.request_id != reference.request_id()) myops::fuzz::Fail("request_id differs");
  } else if (stream.result.status().code() != absl::StatusCode::kInternal) {
    // The request's own error: its code, or UNKNOWN for a code outside gRPC's range.
    const bool has_error = parsed && reference.has_error();
    const int code = has_error ? reference.error().code() : 0;
    const int expected = code >= 1 && code <= 16 ? code : 2;
    if (!has_error || static_cast<int>(stream.result.status().code()) != expected) {
      myops::fuzz::Fail("a stream error that is not the response's own");
    }
  }
  return 0;
}
