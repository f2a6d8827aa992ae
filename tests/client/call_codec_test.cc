// The generic Call's hand-written codec (client/cpp/src/call_codec.h) against protobuf's
// own serializer and parser: requests with every kind of value encode to exactly
// protobuf's bytes, responses of every kind decode as protobuf parses them (whatever the
// slicing of the received bytes), and bad inputs and malformed responses are refused.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "call_codec.h"
#include "myops/client/value.h"
#include "myops/v1/myops.pb.h"
#include "myops/wire/tensor_wire.h"
#include "send_buffers.h"

namespace myops::client::internal {
namespace {

namespace v1 = ::myops::v1;
using ::testing::HasSubstr;

Tensor Floats(std::vector<int64_t> shape, std::vector<float> values) {
  std::string bytes(values.size() * sizeof(float), '\0');
  if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return Tensor(DType::kFloat32, std::move(shape), std::move(bytes));
}

void ToProto(const TensorView& t, v1::Tensor* out) {
  out->set_dtype(static_cast<v1::DType>(t.dtype));
  for (int64_t d : t.shape) out->add_shape(d);
  out->set_data(std::string(static_cast<const char*>(t.data), t.size_bytes));
}

// The protobuf message a Value stands for, built with the generated API.
void ToProto(const Value& value, v1::Value* out) {
  switch (value.kind()) {
    case Value::Kind::kNone:
      out->mutable_none();
      break;
    case Value::Kind::kTensor:
      ToProto(value.tensor(), out->mutable_tensor());
      break;
    case Value::Kind::kInt:
      out->set_int_value(value.int_value());
      break;
    case Value::Kind::kFloat:
      out->set_float_value(value.float_value());
      break;
    case Value::Kind::kBool:
      out->set_bool_value(value.bool_value());
      break;
    case Value::Kind::kString:
      out->set_string_value(value.string_value());
      break;
    case Value::Kind::kIntList:
      out->mutable_int_list()->mutable_values()->Assign(value.int_list().begin(),
                                                        value.int_list().end());
      break;
    case Value::Kind::kFloatList:
      out->mutable_float_list()->mutable_values()->Assign(value.float_list().begin(),
                                                          value.float_list().end());
      break;
    case Value::Kind::kTensorList:
      out->mutable_tensor_list();
      for (const TensorView& t : value.tensor_list()) {
        ToProto(t, out->mutable_tensor_list()->add_tensors());
      }
      break;
    case Value::Kind::kScalarType:
      out->set_scalar_type(static_cast<v1::DType>(value.scalar_type()));
      break;
  }
}

std::string Flat(const grpc::ByteBuffer& buffer) {
  std::string bytes;
  EXPECT_TRUE(wire::Flatten(buffer, &bytes));
  return bytes;
}

// `bytes` as a ByteBuffer of slices of `chunk` bytes (0: one slice).
grpc::ByteBuffer Sliced(const std::string& bytes, size_t chunk) {
  std::vector<grpc::Slice> slices;
  if (chunk == 0) chunk = bytes.size() + 1;
  for (size_t i = 0; i < bytes.size(); i += chunk) slices.emplace_back(bytes.substr(i, chunk));
  return grpc::ByteBuffer(slices.data(), slices.size());
}

// Every kind of value, tensors borrowed and owned, with edge values.
class CallCodecTest : public ::testing::Test {
 protected:
  Tensor x_ = Floats({2, 2}, {1.5f, -2.0f, 0.0f, 1e30f});
  Tensor y_ = Floats({3}, {7.0f, 8.0f, 9.0f});
  Tensor empty_ = Floats({0, 4}, {});
  Tensor scalar_ = Floats({}, {42.0f});
  std::vector<Value> AllKinds() {
    return {x_.view(),
            y_,
            empty_.view(),
            scalar_.view(),
            Value(),
            0,
            -1,
            int64_t{1} << 62,
            2.5,
            -0.0,
            true,
            false,
            "",
            "text with \xc3\xa9",
            Value::IntList({}),
            Value::IntList({1, -2, int64_t{1} << 40}),
            Value::FloatList({}),
            Value::FloatList({0.5, -1e300}),
            std::vector<TensorView>{},
            std::vector<TensorView>{x_.view(), empty_.view()},
            std::vector<Tensor>{y_},
            DType::kFloat64,
            DType::kBFloat16};
  }
};

TEST_F(CallCodecTest, EveryValueKindEncodesAsProtobufDoes) {
  const std::vector<Value> args = AllKinds();
  const std::vector<NamedArg> kwargs = {{"alpha", 2.0}, {"names", "x"}, {"t", x_.view()}};
  for (uint64_t request_id : {uint64_t{0}, uint64_t{7}, ~uint64_t{0}}) {
    for (std::string device : {"", "cuda:1"}) {
      const CallFields call{"myops::scale_shift", args, kwargs, device, request_id};
      ASSERT_TRUE(ValidateCall(call, 1 << 20).ok());
      auto pool = SendBufferPool::Create(0);
      const std::string bytes = Flat(EncodeCallRequest(call, *pool));
      EXPECT_EQ(bytes.size(), EncodedCallSize(call));

      v1::CallRequest expected;
      expected.set_op("myops::scale_shift");
      for (const Value& v : args) ToProto(v, expected.add_arguments()->mutable_value());
      for (const NamedArg& a : kwargs) {
        v1::Argument* arg = expected.add_arguments();
        arg->set_name(a.name);
        ToProto(a.value, arg->mutable_value());
      }
      expected.set_device(device);
      expected.set_request_id(request_id);
      EXPECT_EQ(bytes, expected.SerializeAsString()) << "device " << device << " id " << request_id;

      v1::CallRequest parsed;
      ASSERT_TRUE(parsed.ParseFromString(bytes));
      ASSERT_EQ(parsed.arguments_size(), static_cast<int>(args.size() + kwargs.size()));
      EXPECT_EQ(parsed.arguments(0).value().tensor().data(), x_.bytes());
      EXPECT_EQ(parsed.arguments(4).value().kind_case(), v1::Value::kNone);
      EXPECT_EQ(parsed.arguments(5).value().kind_case(), v1::Value::kIntValue);
      EXPECT_EQ(parsed.arguments(args.size()).name(), "alpha");
      EXPECT_EQ(parsed.request_id(), request_id);
    }
  }
}

// Tensors placed in shared memory travel as references (Tensor.shared_memory), the
// result's region and inline_unfit_results come last: protobuf's bytes exactly.
TEST_F(CallCodecTest, PlacedTensorsEncodeAsRegionReferences) {
  const std::vector<Value> args = {x_.view(), 2.0, std::vector<TensorView>{y_.view(), x_.view()}};
  const std::vector<NamedArg> kwargs = {{"t", y_.view()}};
  CallPlacement placement;
  placement.tensors.push_back({x_.data(), RegionRef{"r", 0, x_.size_bytes()}});
  placement.tensors.push_back({y_.data(), RegionRef{"r", 128, y_.size_bytes()}});
  placement.result = RegionRef{"r", 1 << 20, 300};
  CallFields call{"myops::scale_shift", args, kwargs, "", 5};
  call.placement = &placement;
  ASSERT_TRUE(ValidateCall(call, static_cast<int>(EncodedCallSize(call))).ok());
  auto pool = SendBufferPool::Create(0);
  const std::string bytes = Flat(EncodeCallRequest(call, *pool));
  EXPECT_EQ(bytes.size(), EncodedCallSize(call));

  auto head = [](const TensorView& t, uint64_t offset, v1::Tensor* out) {
    out->set_dtype(static_cast<v1::DType>(t.dtype));
    for (int64_t d : t.shape) out->add_shape(d);
    out->mutable_shared_memory()->set_region("r");
    out->mutable_shared_memory()->set_offset(offset);
    out->mutable_shared_memory()->set_byte_size(t.size_bytes);
  };
  v1::CallRequest expected;
  expected.set_op("myops::scale_shift");
  head(x_.view(), 0, expected.add_arguments()->mutable_value()->mutable_tensor());
  expected.add_arguments()->mutable_value()->set_float_value(2.0);
  v1::TensorList* list = expected.add_arguments()->mutable_value()->mutable_tensor_list();
  head(y_.view(), 128, list->add_tensors());
  head(x_.view(), 0, list->add_tensors());
  v1::Argument* t = expected.add_arguments();
  t->set_name("t");
  head(y_.view(), 128, t->mutable_value()->mutable_tensor());
  expected.set_request_id(5);
  v1::SharedMemoryRef* result = expected.add_result_regions();
  result->set_region("r");
  result->set_offset(1 << 20);
  result->set_byte_size(300);
  expected.set_inline_unfit_results(true);
  EXPECT_EQ(bytes, expected.SerializeAsString());
}

// A result tensor in the call's region is copied out of it; a reference the call did not
// give (another region, or bytes outside this one) is malformed.
TEST_F(CallCodecTest, RegionResultsAreReadFromTheCallsRegion) {
  std::string memory(4096, '\0');
  std::memcpy(&memory[1024], x_.data(), x_.size_bytes());
  const ResponseRegion region{"r", memory.data(), memory.size(), nullptr, false};
  auto response = [&](const std::string& name, uint64_t offset) {
    v1::CallResponse r;
    v1::Tensor* t = r.add_outputs()->mutable_tensor();
    t->set_dtype(static_cast<v1::DType>(x_.dtype()));
    for (int64_t d : x_.shape()) t->add_shape(d);
    t->mutable_shared_memory()->set_region(name);
    t->mutable_shared_memory()->set_offset(offset);
    t->mutable_shared_memory()->set_byte_size(x_.size_bytes());
    return r.SerializeAsString();
  };
  absl::StatusOr<CallResult> r = DecodeCallResponse(Sliced(response("r", 1024), 0), &region);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(std::string(static_cast<const char*>(r->outputs[0].tensor().data),
                        r->outputs[0].tensor().size_bytes),
            x_.bytes());
  for (const auto& [name, offset] : std::vector<std::pair<std::string, uint64_t>>{
           {"other", 1024}, {"r", 4096 - x_.size_bytes() + 1}, {"r", ~uint64_t{0}}}) {
    r = DecodeCallResponse(Sliced(response(name, offset), 0), &region);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInternal) << name << " " << offset;
  }
  r = DecodeCallResponse(Sliced(response("r", 1024), 0));  // no region given
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInternal);
}

TEST_F(CallCodecTest, LargeTensorsUseThePoolAndEncodeExactly) {
  std::vector<float> values(100000);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i);
  const Tensor big = Floats({static_cast<int64_t>(values.size())}, values);
  const std::vector<Value> args = {big.view(), 2.0, 1.0};
  const CallFields call{"myops::scale_shift", args, {}, "", 0};
  auto pool = SendBufferPool::Create(size_t{64} << 20);
  const std::string bytes = Flat(EncodeCallRequest(call, *pool));
  v1::CallRequest parsed;
  ASSERT_TRUE(parsed.ParseFromString(bytes));
  EXPECT_EQ(parsed.arguments(0).value().tensor().data(), big.bytes());
  EXPECT_EQ(pool->retained_bytes(), bytes.size());  // Released back to the pool.
}

// A CallResponse holding every kind of output, as protobuf writes it.
v1::CallResponse EveryKindResponse(const std::vector<Value>& outputs) {
  v1::CallResponse response;
  for (const Value& v : outputs) ToProto(v, response.add_outputs());
  response.mutable_timing()->set_compute_ns(123);
  response.mutable_timing()->set_device("cpu");
  response.set_request_id(99);
  return response;
}

void ExpectSameValue(const Value& got, const Value& want, const std::string& what) {
  ASSERT_EQ(got.kind(), want.kind()) << what;
  auto same_tensor = [&](const TensorView& a, const TensorView& b) {
    EXPECT_EQ(a.dtype, b.dtype) << what;
    EXPECT_EQ(a.shape, b.shape) << what;
    EXPECT_EQ(std::string(static_cast<const char*>(a.data), a.size_bytes),
              std::string(static_cast<const char*>(b.data), b.size_bytes))
        << what;
  };
  switch (want.kind()) {
    case Value::Kind::kTensor:
      EXPECT_TRUE(got.owns_tensors()) << what;
      same_tensor(got.tensor(), want.tensor());
      break;
    case Value::Kind::kTensorList: {
      const auto a = got.tensor_list(), b = want.tensor_list();
      ASSERT_EQ(a.size(), b.size()) << what;
      for (size_t i = 0; i < a.size(); ++i) same_tensor(a[i], b[i]);
      break;
    }
    case Value::Kind::kInt:
      EXPECT_EQ(got.int_value(), want.int_value()) << what;
      break;
    case Value::Kind::kFloat:
      EXPECT_EQ(std::signbit(got.float_value()), std::signbit(want.float_value())) << what;
      EXPECT_EQ(got.float_value(), want.float_value()) << what;
      break;
    case Value::Kind::kBool:
      EXPECT_EQ(got.bool_value(), want.bool_value()) << what;
      break;
    case Value::Kind::kString:
      EXPECT_EQ(got.string_value(), want.string_value()) << what;
      break;
    case Value::Kind::kIntList:
      EXPECT_EQ(got.int_list(), want.int_list()) << what;
      break;
    case Value::Kind::kFloatList:
      EXPECT_EQ(got.float_list(), want.float_list()) << what;
      break;
    case Value::Kind::kScalarType:
      EXPECT_EQ(got.scalar_type(), want.scalar_type()) << what;
      break;
    case Value::Kind::kNone:
      break;
  }
}

TEST_F(CallCodecTest, EveryOutputKindDecodesAsProtobufWroteIt) {
  const std::vector<Value> outputs = AllKinds();
  const std::string bytes = EveryKindResponse(outputs).SerializeAsString();
  for (size_t chunk : {size_t{0}, size_t{1}, size_t{3}, size_t{17}}) {
    absl::StatusOr<CallResult> result = DecodeCallResponse(Sliced(bytes, chunk));
    ASSERT_TRUE(result.ok()) << result.status();
    ASSERT_EQ(result->outputs.size(), outputs.size());
    for (size_t i = 0; i < outputs.size(); ++i) {
      ExpectSameValue(result->outputs[i], outputs[i], "output " + std::to_string(i));
    }
    EXPECT_EQ(result->timing.compute_ns, 123);
    EXPECT_EQ(result->timing.device, "cpu");
    EXPECT_EQ(result->request_id, 99u);
  }
}

TEST_F(CallCodecTest, ProtobufMergeRulesHold) {
  // Two messages back to back parse as one: outputs appended, the later id wins; a tensor
  // field given twice in one Value merges (shape appended, the later data wins).
  v1::CallResponse a = EveryKindResponse({x_.view()});
  v1::CallResponse b = EveryKindResponse({y_});
  b.set_request_id(5);
  v1::Value twice;
  twice.mutable_tensor()->set_dtype(v1::DTYPE_FLOAT32);
  twice.mutable_tensor()->add_shape(1);
  twice.mutable_tensor()->set_data(std::string(4, 'a'));
  v1::Value second;
  second.mutable_tensor()->add_shape(2);
  second.mutable_tensor()->set_data(std::string(8, 'b'));
  std::string merged_value = twice.SerializeAsString() + second.SerializeAsString();
  std::string bytes = a.SerializeAsString() + b.SerializeAsString();
  bytes += std::string(1, '\x0a') + static_cast<char>(merged_value.size()) + merged_value;

  v1::CallResponse reference;
  ASSERT_TRUE(reference.ParseFromString(bytes));
  absl::StatusOr<CallResult> result = DecodeCallResponse(Sliced(bytes, 5));
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->outputs.size(), 3u);
  EXPECT_EQ(result->request_id, 5u);
  const TensorView merged = result->outputs[2].tensor();
  EXPECT_EQ(merged.shape, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(std::string(static_cast<const char*>(merged.data), merged.size_bytes),
            reference.outputs(2).tensor().data());
}

TEST_F(CallCodecTest, StreamResponsesCarryResultsAndErrors) {
  v1::CallStreamResponse ok;
  ok.set_request_id(3);
  *ok.mutable_response() = EveryKindResponse({x_.view(), 1.5});
  CallStreamResult result = DecodeCallStreamResponse(Sliced(ok.SerializeAsString(), 2));
  EXPECT_EQ(result.request_id, 3u);
  ASSERT_TRUE(result.result.ok()) << result.result.status();
  ExpectSameValue(result.result->outputs[0], x_.view(), "tensor");
  EXPECT_EQ(result.result->request_id, 3u);

  v1::CallStreamResponse error;
  error.set_request_id(4);
  error.mutable_error()->set_code(3);
  error.mutable_error()->set_message("argument \"alpha\": expected a float");
  result = DecodeCallStreamResponse(Sliced(error.SerializeAsString(), 0));
  EXPECT_EQ(result.request_id, 4u);
  EXPECT_EQ(result.result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(result.result.status().message(), "argument \"alpha\": expected a float");

  error.mutable_error()->set_code(0);
  result = DecodeCallStreamResponse(Sliced(error.SerializeAsString(), 0));
  EXPECT_EQ(result.result.status().code(), absl::StatusCode::kInternal);

  v1::CallStreamResponse neither;
  neither.set_request_id(6);
  result = DecodeCallStreamResponse(Sliced(neither.SerializeAsString(), 0));
  EXPECT_EQ(result.result.status().code(), absl::StatusCode::kInternal);
}

TEST_F(CallCodecTest, MalformedResponsesAreInternalErrors) {
  const std::string good = EveryKindResponse({x_.view(), 2}).SerializeAsString();
  for (size_t cut : {size_t{1}, good.size() / 2, good.size() - 1}) {
    absl::StatusOr<CallResult> r = DecodeCallResponse(Sliced(good.substr(0, cut), 3));
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInternal) << "cut at " << cut;
  }
  v1::CallResponse short_data = EveryKindResponse({x_.view()});
  short_data.mutable_outputs(0)->mutable_tensor()->mutable_data()->pop_back();
  absl::StatusOr<CallResult> r = DecodeCallResponse(Sliced(short_data.SerializeAsString(), 0));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(r.status().message(), HasSubstr("server response output 0"));

  // Lengths and tags as protobuf reads them: an over-long (8-byte) length is refused; an
  // unknown group is kept as protobuf keeps it.
  const std::string overlong("\x62\x80\x80\x80\x80\x80\x80\x80\x00", 9);
  ASSERT_FALSE(v1::CallResponse().ParseFromString(overlong));
  EXPECT_EQ(DecodeCallResponse(Sliced(overlong, 2)).status().code(), absl::StatusCode::kInternal);
  const std::string group = good + std::string("\x7b\x08\x01\x7c", 4);  // Field 15.
  ASSERT_TRUE(v1::CallResponse().ParseFromString(group));
  EXPECT_TRUE(DecodeCallResponse(Sliced(group, 3)).ok());

  v1::CallResponse no_kind;
  no_kind.add_outputs();
  r = DecodeCallResponse(Sliced(no_kind.SerializeAsString(), 0));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(r.status().message(), HasSubstr("has no value"));

  v1::CallResponse bad_dtype;
  bad_dtype.add_outputs()->set_scalar_type(static_cast<v1::DType>(77));
  r = DecodeCallResponse(Sliced(bad_dtype.SerializeAsString(), 0));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInternal);
}

TEST_F(CallCodecTest, BadArgumentsAreRefusedNamingThem) {
  auto invalid = [](const CallFields& call, int max = 1 << 20) {
    absl::Status status = ValidateCall(call, max);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    return std::string(status.message());
  };
  TensorView null_data{DType::kFloat32, {2}, nullptr, 8};
  std::vector<Value> args = {x_.view(), null_data};
  EXPECT_THAT(invalid({"op::x", args, {}, "", 0}), HasSubstr("argument 2: data is null"));

  TensorView wrong_size{DType::kFloat32, {3}, x_.data(), 8};
  std::vector<NamedArg> kwargs = {{"other", wrong_size}};
  EXPECT_THAT(invalid({"op::x", {}, kwargs, "", 0}), HasSubstr("argument \"other\": size_bytes"));

  std::vector<Value> list = {
      std::vector<TensorView>{x_.view(), {DType::kFloat32, {-1}, nullptr, 0}}};
  EXPECT_THAT(invalid({"op::x", list, {}, "", 0}), HasSubstr("argument 1, tensor 2"));

  std::vector<Value> unknown_dtype = {Value(static_cast<DType>(99))};
  EXPECT_THAT(invalid({"op::x", unknown_dtype, {}, "", 0}), HasSubstr("not a known DType"));
  std::vector<Value> unknown_tensor_dtype = {TensorView{static_cast<DType>(0), {}, nullptr, 0}};
  EXPECT_THAT(invalid({"op::x", unknown_tensor_dtype, {}, "", 0}), HasSubstr("argument 1: "));

  EXPECT_THAT(invalid({"", {}, {}, "", 0}), HasSubstr("op is empty"));
  std::vector<NamedArg> empty_name = {{"", 1}};
  EXPECT_THAT(invalid({"op::x", {}, empty_name, "", 0}), HasSubstr("empty name"));
  std::vector<NamedArg> twice = {{"a", 1}, {"a", 2}};
  EXPECT_THAT(invalid({"op::x", {}, twice, "", 0}), HasSubstr("\"a\" is given twice"));

  std::vector<Value> big = {x_.view()};
  EXPECT_THAT(invalid({"op::x", big, {}, "", 0}, 15), HasSubstr("max_message_bytes"));
  EXPECT_THAT(invalid({"op::x", big, {}, "", 0}, 20), HasSubstr("bytes encoded"));
}

TEST(ValueTest, ConversionsPickTheKindsTheirTypesSay) {
  EXPECT_EQ(Value(3).kind(), Value::Kind::kInt);
  EXPECT_EQ(Value(uint8_t{3}).kind(), Value::Kind::kInt);
  EXPECT_EQ(Value(3.0f).kind(), Value::Kind::kFloat);
  EXPECT_EQ(Value(true).kind(), Value::Kind::kBool);
  EXPECT_EQ(Value("s").kind(), Value::Kind::kString);
  EXPECT_EQ(Value(std::nullopt).kind(), Value::Kind::kNone);
  EXPECT_EQ(Value(DType::kFloat16).kind(), Value::Kind::kScalarType);
  EXPECT_EQ(Value::IntList({1, 2}).int_list(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(ValueKindName(Value::FloatList({}).kind()), "float list");

  Tensor t = Floats({1}, {4.0f});
  Value borrowed = t.view();
  EXPECT_FALSE(borrowed.owns_tensors());
  EXPECT_EQ(borrowed.tensor().data, t.data());
  Tensor copy = borrowed.TakeTensor();
  EXPECT_NE(copy.data(), t.data());
  EXPECT_EQ(copy.bytes(), t.bytes());
  EXPECT_TRUE(borrowed.is_none());

  Value owned = std::vector<Tensor>{t, t};
  EXPECT_TRUE(owned.owns_tensors());
  EXPECT_EQ(owned.tensor_list().size(), 2u);
  EXPECT_EQ(owned.TakeTensorList()[1].bytes(), t.bytes());
}

}  // namespace
}  // namespace myops::client::internal
