// Codec and device validation: a table of malformed requests, each with the exact status
// code and a fragment of the message the client will read.
#include <grpcpp/support/proto_buffer_reader.h>
#include <gtest/gtest.h>

#include <cctype>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

#include "frontends/myops_v1/call_codec.h"
#include "frontends/myops_v1/codec.h"
#include "owned_result.h"
#include "runtime/device.h"

namespace myops::server {
namespace {

using myops::v1::Tensor;

Tensor MakeTensor(int dtype, std::vector<int64_t> shape, size_t bytes) {
  Tensor t;
  t.set_dtype(static_cast<myops::v1::DType>(dtype));
  for (int64_t d : shape) t.add_shape(d);
  t.mutable_data()->assign(bytes, '\0');
  return t;
}

struct BadTensor {
  const char* name;
  Tensor tensor;
  TensorLimits limits;
  const char* fragment;
};

constexpr int64_t kBig = int64_t{1} << 40;

std::vector<BadTensor> BadTensors() {
  TensorLimits tight{/*max_elements=*/100, /*max_bytes=*/256, /*max_dims=*/4};
  TensorLimits loose{std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::max(), 64};
  return {
      {"unspecified dtype",
       MakeTensor(0, {2}, 8),
       {},
       "input.dtype is DTYPE_UNSPECIFIED; expected one of DTYPE_FLOAT32"},
      {"unknown dtype", MakeTensor(99, {2}, 8), {}, "input.dtype has unknown value 99"},
      {"negative dtype", MakeTensor(-1, {2}, 8), {}, "input.dtype has unknown value -1"},
      {"first unknown dtype",
       MakeTensor(11, {2}, 2),
       {},
       "input.dtype has unknown value 11; expected one of DTYPE_FLOAT32, DTYPE_FLOAT64, "
       "DTYPE_FLOAT16, DTYPE_BFLOAT16, DTYPE_INT8, DTYPE_INT16, DTYPE_INT32, DTYPE_INT64, "
       "DTYPE_UINT8, DTYPE_BOOL"},
      {"int64 short data", MakeTensor(8, {3}, 16), {}, "shape [3] of int64 needs exactly 24"},
      {"negative dim",
       MakeTensor(1, {2, -3}, 0),
       {},
       "input.shape[1] is -3; sizes must be >= 0 (shape [2, -3])"},
      {"negative dim after a zero", MakeTensor(1, {0, -1}, 0), {}, "input.shape[1] is -1"},
      {"too many dims", MakeTensor(1, {1, 1, 1, 1, 1}, 4), tight,
       "input has 5 dimensions; at most 4"},
      {"numel overflows int64", MakeTensor(1, {kBig, kBig}, 0), loose,
       "has more elements than fit in int64"},
      {"bytes overflow int64", MakeTensor(2, {int64_t{1} << 61}, 0), loose,
       "needs 2305843009213693952 x 8 bytes"},
      {"over element limit", MakeTensor(1, {11, 10}, 440), tight,
       "input has 110 elements (shape [11, 10]); this server's limit is 100"},
      {"over byte limit", MakeTensor(2, {40}, 320), tight,
       "input needs 40 x 8 bytes (shape [40], float64); this server's limit is 256 bytes"},
      {"short data",
       MakeTensor(1, {2, 3}, 10),
       {},
       "input.data has 10 bytes but shape [2, 3] of float32 needs exactly 24 (6 x 4)"},
      {"long data",
       MakeTensor(1, {2, 3}, 25),
       {},
       "input.data has 25 bytes but shape [2, 3] of float32 needs exactly 24"},
      {"0-d without data",
       MakeTensor(2, {}, 0),
       {},
       "input.data has 0 bytes but shape [] of float64 needs exactly 8"},
      {"empty with data",
       MakeTensor(1, {0, 4}, 4),
       {},
       "input.data has 4 bytes but shape [0, 4] of float32 needs exactly 0"},
      {"float16 odd bytes", MakeTensor(3, {3}, 5), {}, "shape [3] of float16 needs exactly 6"},
      {"bfloat16 as float32 bytes",
       MakeTensor(4, {4}, 16),
       {},
       "shape [4] of bfloat16 needs exactly 8"},
      {"huge claim, little data",
       MakeTensor(1, {1 << 20, 1 << 20}, 16),
       {},
       "input has 1099511627776 elements"},
      // Empty, but PyTorch's contiguous strides would overflow: not for PyTorch to find.
      {"empty, other sizes overflow",
       MakeTensor(1, {int64_t{1} << 40, int64_t{1} << 40, 0}, 0),
       {},
       "input.shape [1099511627776, 1099511627776, 0] has more elements than fit in int64 "
       "(zero sizes aside)"},
      {"empty first, strides overflow",
       MakeTensor(1, {0, int64_t{1} << 62, 4}, 0),
       {},
       "input.shape [0, 4611686018427387904, 4] has more elements than fit in int64"},
  };
}

TEST(CodecTest, RejectsMalformedTensorsWithPreciseMessages) {
  for (const BadTensor& c : BadTensors()) {
    SCOPED_TRACE(c.name);
    auto got = DecodeTensor(c.tensor, "input", c.limits);
    ASSERT_FALSE(got.ok());
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(std::string(got.status().message()).find(c.fragment), std::string::npos)
        << "message: " << got.status().message();
  }
}

struct BadDevice {
  const char* text;
  std::vector<Device> serves;
  absl::StatusCode code;
  const char* fragment;
};

TEST(CodecTest, RejectsBadOrUnavailableDevices) {
  const std::vector<Device> cpu = {{DeviceKind::kCpu, 0}};
  const std::vector<Device> gpus = {{DeviceKind::kCuda, 0}, {DeviceKind::kCuda, 1}};
  const std::vector<BadDevice> cases = {
      {"tpu", cpu, absl::StatusCode::kInvalidArgument,
       "device \"tpu\" is not a valid device; expected \"\", \"cpu\", \"cuda\" or \"cuda:N\""},
      {"CPU", cpu, absl::StatusCode::kInvalidArgument, "device \"CPU\" is not a valid device"},
      {" cpu", cpu, absl::StatusCode::kInvalidArgument, "device \" cpu\" is not a valid device"},
      {"cuda:", cpu, absl::StatusCode::kInvalidArgument, "device \"cuda:\" is not a valid device"},
      {"cuda:-1", cpu, absl::StatusCode::kInvalidArgument, "device \"cuda:-1\""},
      {"cuda:x", cpu, absl::StatusCode::kInvalidArgument, "device \"cuda:x\""},
      {"cuda:0 ", cpu, absl::StatusCode::kInvalidArgument, "device \"cuda:0 \""},
      {"cuda:99999999", cpu, absl::StatusCode::kInvalidArgument, "device \"cuda:99999999\""},
      {"cuda", cpu, absl::StatusCode::kFailedPrecondition,
       "device \"cuda\" is not available on this server; it serves: cpu"},
      {"cuda:0", cpu, absl::StatusCode::kFailedPrecondition,
       "device \"cuda:0\" is not available on this server; it serves: cpu"},
      {"cuda:2", gpus, absl::StatusCode::kFailedPrecondition,
       "device \"cuda:2\" is not available on this server; it serves: cuda:0, cuda:1"},
      {"cpu", gpus, absl::StatusCode::kFailedPrecondition,
       "device \"cpu\" is not available on this server; it serves: cuda:0, cuda:1"},
  };
  for (const BadDevice& c : cases) {
    SCOPED_TRACE(c.text);
    absl::Status status;
    auto parsed = ParseDeviceRequest(c.text);
    if (!parsed.ok()) {
      status = parsed.status();
    } else {
      status = DeviceSet(c.serves).Resolve(*parsed).status();
    }
    EXPECT_EQ(status.code(), c.code);
    EXPECT_NE(std::string(status.message()).find(c.fragment), std::string::npos)
        << "message: " << status.message();
  }
}

TEST(CodecTest, AcceptsValidTensorsAsZeroCopyViews) {
  for (auto shape : {std::vector<int64_t>{}, {0}, {3, 0, 2}, {2, 3}}) {
    int64_t numel = 1;
    for (int64_t d : shape) numel *= d;
    Tensor t = MakeTensor(3, shape, static_cast<size_t>(numel * 2));
    auto view = DecodeTensor(t, "input", {});
    ASSERT_TRUE(view.ok()) << view.status();
    EXPECT_EQ(view->dtype, DType::kFloat16);
    EXPECT_EQ(view->shape, shape);
    EXPECT_EQ(view->bytes, numel * 2);
    EXPECT_EQ(view->data, t.data().data());  // no copy
  }
}

TEST(CodecTest, DeviceEchoIsCut) {
  const std::string device(1 << 20, 'x');
  auto parsed = ParseDeviceRequest(device);
  ASSERT_FALSE(parsed.ok());
  const std::string message(parsed.status().message());
  EXPECT_LT(message.size(), 400u) << message;
  EXPECT_NE(message.find("...(1048576 bytes)\" is not a valid device"), std::string::npos)
      << message;
  // Non-printable bytes are escaped, not passed into the status.
  EXPECT_NE(std::string(ParseDeviceRequest(std::string("cu\0\n", 4)).status().message())
                .find("\"cu\\x00\\n\""),
            std::string::npos);
}

TEST(CodecTest, HandEncodedStreamResponsesParse) {
  myops::v1::ScaleShiftRequest request;
  *request.mutable_input() = MakeTensor(1, {3}, 12);
  request.set_request_id(9);
  grpc::Slice output(std::string("abcdefghijkl"));
  Timing timing;
  timing.device = "cpu";
  for (const grpc::ByteBuffer& encoded :
       {EncodeStreamResponse(request, output, timing),
        EncodeStreamError(9, absl::InvalidArgumentError("bad input"))}) {
    std::string flat;
    ASSERT_TRUE(wire::Flatten(encoded, &flat));
    myops::v1::ScaleShiftStreamResponse parsed;
    ASSERT_TRUE(parsed.ParseFromString(flat));
    EXPECT_EQ(parsed.request_id(), 9u);
    if (parsed.has_response()) {
      EXPECT_EQ(parsed.response().output().data(), "abcdefghijkl");
      EXPECT_EQ(parsed.response().output().shape(0), 3);
      EXPECT_EQ(parsed.response().request_id(), 9u);
      EXPECT_EQ(parsed.response().timing().device(), "cpu");
    } else {
      EXPECT_EQ(parsed.error().code(), 3);
      EXPECT_EQ(parsed.error().message(), "bad input");
    }
  }
  // The overhead bound the server's send limit relies on.
  request.set_alpha(0);
  request.clear_device();
  timing.decode_ns = INT64_MAX;
  timing.queue_ns = INT64_MAX;
  timing.compute_ns = INT64_MAX;
  timing.encode_ns = INT64_MAX;
  timing.total_ns = INT64_MAX;
  timing.device = "cuda:2147483647";
  request.set_request_id(UINT64_MAX);
  const size_t request_size = request.ByteSizeLong();
  EXPECT_LE(static_cast<int64_t>(EncodeStreamResponse(request, output, timing).Length()),
            static_cast<int64_t>(request_size) + kMaxResponseOverheadBytes);
}

// The kernels store whole elements into the output, so it is aligned for the widest item
// even when small (UBSan reported misaligned float stores into a 16-byte output before).
TEST(CodecTest, OutputBuffersAreAlignedForAnyItemSize) {
  for (int64_t numel : {int64_t{1}, int64_t{2}, int64_t{4}, int64_t{5}, int64_t{64}}) {
    TensorView like;
    like.dtype = DType::kFloat64;
    like.shape = {numel};
    like.bytes = numel * 8;
    grpc::Slice slice;
    MutableTensorView out = AllocateOutput(like, &slice);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(out.data) % alignof(double), 0u) << "numel " << numel;
    EXPECT_EQ(slice.size(), static_cast<size_t>(like.bytes));
  }
}

TEST(CodecTest, HandEncodedResponseParsesAsAScaleShiftResponse) {
  for (int64_t numel : {int64_t{0}, int64_t{1}, int64_t{40}, int64_t{1} << 20}) {
    myops::v1::ScaleShiftRequest request;
    *request.mutable_input() = MakeTensor(1, {numel, 1}, static_cast<size_t>(numel * 4));
    request.set_request_id(77);
    auto input = DecodeTensor(request.input(), "input", {});
    ASSERT_TRUE(input.ok());
    grpc::Slice slice;
    MutableTensorView out = AllocateOutput(*input, &slice);
    ASSERT_EQ(slice.size(), static_cast<size_t>(numel * 4));
    for (int64_t i = 0; i < out.bytes; ++i)
      static_cast<char*>(out.data)[i] = static_cast<char>(i % 251);
    Timing timing;
    timing.total_ns = 123;
    timing.device = "cpu";
    grpc::ByteBuffer encoded = EncodeResponse(request, slice, timing);

    myops::v1::ScaleShiftResponse parsed;
    grpc::ProtoBufferReader reader(&encoded);
    ASSERT_TRUE(parsed.ParseFromZeroCopyStream(&reader)) << "numel " << numel;
    EXPECT_EQ(parsed.output().dtype(), myops::v1::DTYPE_FLOAT32);
    EXPECT_EQ(std::vector<int64_t>(parsed.output().shape().begin(), parsed.output().shape().end()),
              (std::vector<int64_t>{numel, 1}));
    ASSERT_EQ(parsed.output().data().size(), static_cast<size_t>(numel * 4));
    for (int64_t i = 0; i < out.bytes; ++i) {
      ASSERT_EQ(parsed.output().data()[static_cast<size_t>(i)], static_cast<char>(i % 251));
    }
    EXPECT_EQ(parsed.timing().total_ns(), 123);
    EXPECT_EQ(parsed.timing().device(), "cpu");
    EXPECT_EQ(parsed.request_id(), 77u);
  }
}

TEST(CodecTest, RequestsParseFromReceivedBytes) {
  myops::v1::ScaleShiftRequest request;
  *request.mutable_input() = MakeTensor(2, {3}, 24);
  request.set_alpha(2.5);
  grpc::Slice wire(request.SerializeAsString());
  grpc::ByteBuffer bytes(&wire, 1);
  myops::v1::ScaleShiftRequest parsed;
  wire::TensorData data;
  ASSERT_TRUE(ParseRequest(bytes, &parsed, &data).ok());
  EXPECT_EQ(parsed.alpha(), 2.5);
  EXPECT_TRUE(parsed.input().data().empty());  // Left in the received slices.
  ASSERT_EQ(data.size(), 24u);
  std::string copy(24, '\0');
  data.CopyTo(copy.data());
  EXPECT_EQ(copy, request.input().data());

  // The data's size, not the message's, is what the head is checked against.
  auto head = DecodeTensorHead(parsed.input(), data.size(), "input", {});
  ASSERT_TRUE(head.ok()) << head.status();
  EXPECT_EQ(head->bytes, 24);
  EXPECT_EQ(head->data, nullptr);
  auto short_data = DecodeTensorHead(parsed.input(), 23, "input", {});
  EXPECT_NE(short_data.status().message().find("input.data has 23 bytes but shape [3]"),
            absl::string_view::npos)
      << short_data.status();

  grpc::Slice junk(std::string("\xff\xff\xff"));
  grpc::ByteBuffer bad(&junk, 1);
  EXPECT_EQ(ParseRequest(bad, &parsed, &data).code(), absl::StatusCode::kInvalidArgument);
}

TEST(DeviceTest, ResolvesRequestsAgainstServedDevices) {
  DeviceSet set({{DeviceKind::kCuda, 0}, {DeviceKind::kCuda, 1}, {DeviceKind::kCpu, 0}});
  EXPECT_EQ(*set.Resolve(*ParseDeviceRequest("")), 0);
  EXPECT_EQ(*set.Resolve(*ParseDeviceRequest("cpu")), 2);
  EXPECT_EQ(*set.Resolve(*ParseDeviceRequest("cuda:1")), 1);
  EXPECT_EQ(*set.Resolve(*ParseDeviceRequest("cuda"), 0), 0);
  EXPECT_EQ(*set.Resolve(*ParseDeviceRequest("cuda"), 1), 1);  // spread over GPUs
  EXPECT_EQ(set.Names(), "cuda:0, cuda:1, cpu");
}

TEST(DeviceTest, ParsesServerDeviceLists) {
  auto all = ParseDeviceList("cuda,cpu", 2);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(DeviceSet(*all).Names(), "cuda:0, cuda:1, cpu");
  EXPECT_EQ(DeviceSet(*ParseDeviceList("cpu,cpu", 0)).Names(), "cpu");
  EXPECT_EQ(ParseDeviceList("cuda", 0).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ParseDeviceList("cuda:3", 2).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ParseDeviceList("gpu", 2).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseDeviceList("", 2).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(CodecTest, DTypeTableMatchesTheProtoEnum) {
  for (int value = -2; value < 64; ++value) {
    SCOPED_TRACE(value);
    const std::optional<DType> dtype = DTypeFromWire(value);
    EXPECT_EQ(myops::v1::DType_IsValid(value), value == 0 || dtype.has_value());
    if (!dtype) continue;
    std::string upper(DTypeName(*dtype));
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    EXPECT_EQ(myops::v1::DType_Name(static_cast<myops::v1::DType>(value)), "DTYPE_" + upper);
    EXPECT_EQ(DTypeFromName(DTypeName(*dtype)), dtype);
  }
  EXPECT_EQ(ItemSize(DType::kInt8), sizeof(int8_t));
  EXPECT_EQ(ItemSize(DType::kInt16), sizeof(int16_t));
  EXPECT_EQ(ItemSize(DType::kInt32), sizeof(int32_t));
  EXPECT_EQ(ItemSize(DType::kInt64), sizeof(int64_t));
  EXPECT_EQ(ItemSize(DType::kUInt8), sizeof(uint8_t));
  EXPECT_EQ(ItemSize(DType::kBool), sizeof(bool));
  EXPECT_EQ(ItemSize(DType::kFloat64), sizeof(double));
}

// Every dtype decodes as a zero-copy view and comes back in the response with its wire
// value and its bytes unchanged; one byte less is refused with the dtype's name.
TEST(CodecTest, EveryDTypeRoundTrips) {
  for (const DTypeInfo& info : kDTypeTable) {
    SCOPED_TRACE(std::string(info.name));
    const int wire = static_cast<int>(info.dtype);
    const int64_t bytes = 6 * info.item_size;
    myops::v1::ScaleShiftRequest request;
    *request.mutable_input() = MakeTensor(wire, {2, 3}, static_cast<size_t>(bytes));
    std::string* data = request.mutable_input()->mutable_data();
    for (size_t i = 0; i < data->size(); ++i) (*data)[i] = static_cast<char>(i % 2);  // bool-safe
    absl::StatusOr<TensorView> input = DecodeTensor(request.input(), "input", {});
    ASSERT_TRUE(input.ok()) << input.status();
    EXPECT_EQ(input->dtype, info.dtype);
    EXPECT_EQ(input->bytes, bytes);
    EXPECT_EQ(input->data, data->data());

    grpc::Slice slice;
    MutableTensorView out = AllocateOutput(*input, &slice);
    ASSERT_EQ(out.dtype, info.dtype);
    ASSERT_EQ(out.bytes, bytes);
    std::memcpy(out.data, input->data, static_cast<size_t>(bytes));
    grpc::ByteBuffer encoded = EncodeResponse(request, slice, Timing());
    myops::v1::ScaleShiftResponse parsed;
    grpc::ProtoBufferReader reader(&encoded);
    ASSERT_TRUE(parsed.ParseFromZeroCopyStream(&reader));
    EXPECT_EQ(static_cast<int>(parsed.output().dtype()), wire);
    EXPECT_EQ(parsed.output().data(), *data);

    Tensor short_data = MakeTensor(wire, {2, 3}, static_cast<size_t>(bytes - 1));
    absl::StatusOr<TensorView> refused = DecodeTensor(short_data, "input", {});
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.status().message().find(absl::StrCat("of ", info.name, " needs exactly ")),
              absl::string_view::npos)
        << refused.status();
  }
}

// Call arguments of kind ScalarType (e.g. an op's dtype=) take every table dtype and
// refuse other values as tensor dtypes are refused.
TEST(CodecTest, CallScalarTypeArgumentsTakeEveryTableDType) {
  myops::v1::CallRequest request;
  for (const DTypeInfo& info : kDTypeTable) {
    request.add_arguments()->mutable_value()->set_scalar_type(
        static_cast<myops::v1::DType>(info.dtype));
  }
  absl::StatusOr<std::vector<NamedValue>> values = DecodeArguments(request, {});
  ASSERT_TRUE(values.ok()) << values.status();
  ASSERT_EQ(values->size(), static_cast<size_t>(kNumDTypes));
  for (int i = 0; i < kNumDTypes; ++i) {
    EXPECT_EQ((*values)[i].value.kind, Value::Kind::kScalarType);
    EXPECT_EQ((*values)[i].value.scalar_type, kDTypeTable[i].dtype);
  }
  request.add_arguments()->mutable_value()->set_scalar_type(static_cast<myops::v1::DType>(11));
  values = DecodeArguments(request, {});
  ASSERT_FALSE(values.ok());
  EXPECT_NE(values.status().message().find("unknown scalar_type 11; expected one of DTYPE_FLOAT32"),
            absl::string_view::npos)
      << values.status();
}

// A result tensor's memory (held by its owner) lives as long as the response that sends
// it, not as long as the call: the response's slices hold the owner.
TEST(CallCodec, ResponsesHoldTheirResultTensorsMemory) {
  bool freed = false;
  grpc::ByteBuffer response;
  {
    OpCall call = test_support::CallWithOwnedResult(&freed);
    response = EncodeCallResponse(call, Timing(), /*request_id=*/7);
  }
  EXPECT_FALSE(freed);
  myops::v1::CallResponse parsed;
  grpc::ProtoBufferReader reader(&response);
  ASSERT_TRUE(parsed.ParseFromZeroCopyStream(&reader));
  ASSERT_EQ(parsed.outputs_size(), 1);
  float values[2];
  ASSERT_EQ(parsed.outputs(0).tensor().data().size(), sizeof(values));
  std::memcpy(values, parsed.outputs(0).tensor().data().data(), sizeof(values));
  EXPECT_EQ(values[0], 1.5f);
  EXPECT_EQ(values[1], -2.0f);
  response.Clear();
  EXPECT_TRUE(freed);
}

}  // namespace
}  // namespace myops::server
