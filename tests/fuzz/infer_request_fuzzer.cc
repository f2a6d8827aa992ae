// Fuzz target: the Open Inference Protocol's gRPC ModelInfer decoding, as the front end
// runs it (frontends/oip/grpc/service.cc): wire::CheckInferRequestHead over an
// inference.ModelInferRequest received as several slices (slices.h), kserve::
// ParseInferRequest (its raw contents left in the slices: it must agree with protobuf's
// own parse of the bytes, verdict and message), DecodeInferRequest with the default limits, then
// BindInfer (the binding shared with REST: arguments, timeout, outputs, regions) for an operator
// taking a tensor, a float, an int list, a tensor list and a str, on a server with shared memory:
// one 64 KiB region registered as "r" (frontends/oip/shm.h). Beyond "no crash, no
// sanitizer report", checks what the front end relies on: refusals are INVALID_ARGUMENT
// (NOT_FOUND for an unknown region); what the budget reserves for the parse
// (InferParseReservation, from the head check's sizes) bounds the parsed message; every decoded
// tensor holds numel * itemsize bytes, and one in shared memory lies inside the region or in a copy
// the budget granted.
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <grpcpp/support/proto_buffer_reader.h>

#include <string>

#include "frontends/oip/codec.h"
#include "fuzz_op.h"
#include "fuzz_shm.h"
#include "kserve/v2/grpc_predict_v2.pb.h"
#include "myops/wire/call_wire.h"
#include "myops/wire/tensor_wire.h"
#include "slices.h"

namespace {

using myops::fuzz::Fail;
using myops::server::ArgKind;

const myops::server::OpInfo& Op() {
  static const myops::server::OpInfo op =
      myops::fuzz::FuzzOp({{"x", ArgKind::kTensor},
                           {"alpha", ArgKind::kFloat},
                           {"sizes", ArgKind::kIntList},
                           {"xs", ArgKind::kTensorList},
                           {"text", ArgKind::kString}},
                          {{"", ArgKind::kTensor}, {"parts", ArgKind::kTensorList}});
  return op;
}

// `m`'s bytes with map entries in key order, so that equal messages serialize alike.
std::string Deterministic(const google::protobuf::MessageLite& m) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    m.SerializeToCodedStream(&coded);
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  myops::fuzz::RegionsWithRegion();
  return myops::fuzz::QuietProtobufLogs();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  myops::fuzz::SlicedInput input =
      myops::fuzz::SplitIntoSlices(bytes, size, myops::wire::kMaxHeadBytes);
  auto sizes = myops::wire::CheckInferRequestHead(input.buffer);
  if (!sizes.ok()) {
    if (sizes.status().code() != absl::StatusCode::kInvalidArgument) Fail("the head's code");
    return 0;
  }
  inference::ModelInferRequest request;
  myops::wire::DataFieldValues raw;
  const absl::Status parsed =
      myops::server::kserve::ParseInferRequest(input.buffer, &request, &raw);
  // Protobuf's own parse of the same bytes: the same verdict, and the same message once
  // the raw contents left in the slices are put back.
  inference::ModelInferRequest whole;
  grpc::ByteBuffer copy = input.buffer;
  grpc::ProtoBufferReader reader(&copy);
  if (whole.ParseFromZeroCopyStream(&reader) != parsed.ok())
    Fail("a verdict protobuf's differs from");
  if (!parsed.ok()) {
    if (parsed.code() != absl::StatusCode::kInvalidArgument) Fail("the parse's code");
    return 0;
  }
  if (request.raw_input_contents_size() != 0) Fail("raw contents parsed into the message");
  if (raw.count() != static_cast<size_t>(whole.raw_input_contents_size())) Fail("a raw count");
  for (size_t k = 0; k < raw.count(); ++k) {
    const std::string& expected = whole.raw_input_contents(static_cast<int>(k));
    std::string got(raw.size(k), '\0');
    raw.CopyTo(k, got.data());
    if (got != expected) Fail("raw contents that differ from protobuf's");
  }
  whole.clear_raw_input_contents();
  if (Deterministic(whole) != Deterministic(request))
    Fail("a message that differs from protobuf's");
  // What the front end reserves before parsing (kserve::InferParseReservation) bounds
  // the parsed message (tests/server/frontends/grpc/parse_memory_test.cc measures the heap
  // a parse takes for the costliest shapes).
  // The message object itself lives in the call's state, not in what was reserved.
  const auto reserved = myops::server::kserve::InferParseReservation(size, *sizes);
  // Decoding copies the raw contents out of the slices: those copies count too.
  size_t raw_bytes = 0;
  for (size_t k = 0; k < raw.count(); ++k) raw_bytes += raw.size(k);
  if (request.SpaceUsedLong() - sizeof(request) + raw_bytes >
      static_cast<size_t>(reserved) - size) {
    Fail("the parsed request outgrows its reservation");
  }
  auto refused = [](const absl::Status& s) {
    return s.code() == absl::StatusCode::kInvalidArgument ||
           s.code() == absl::StatusCode::kNotFound;
  };
  int64_t granted = 0;
  auto reserve = [&granted](int64_t bytes) {
    if (bytes < 0 || static_cast<uint64_t>(bytes) > myops::fuzz::kFuzzRegionBytes)
      Fail("a copy beyond the region");
    granted += bytes;
    return absl::OkStatus();
  };
  namespace k = myops::server::kserve;
  k::InferRequest decoded;
  const myops::server::OwnedRegions shm = myops::fuzz::RegionsWithRegion();
  if (absl::Status s = k::DecodeInferRequest(request, raw, Op().QualifiedName(),
                                             myops::server::TensorLimits{}, &decoded);
      !s.ok()) {
    if (!refused(s)) Fail("the decode's code");
    return 0;
  }
  k::InferCall call;
  if (absl::Status s = k::BindInfer(Op(), shm, reserve, &decoded, &call); !s.ok()) {
    if (!refused(s)) Fail("the binding's code");
    return 0;
  }
  for (const auto& slice : call.shm_inputs) {
    if (slice.size() > myops::fuzz::kFuzzRegionBytes) Fail("a slice beyond the region");
  }
  for (const myops::server::NamedValue& v : call.args) {
    if (v.value.kind != myops::server::Value::Kind::kTensor) continue;
    const myops::server::TensorView& t = v.value.tensor;
    int64_t numel = 1;
    for (int64_t d : t.shape) numel *= d;
    if (t.bytes != numel * myops::ItemSize(t.dtype)) {
      Fail("a tensor's bytes are not numel * itemsize");
    }
  }
  if (call.timeout_us < 0) Fail("a negative timeout");
  if (!call.shm_outputs.empty() && call.shm_outputs.slices.size() != call.selected.size()) {
    Fail("output regions not indexed like the outputs");
  }
  return 0;
}
