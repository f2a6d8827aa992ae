// Tests of myops::wire (proto/wire): the hand-written encoding must be byte-for-byte what
// protobuf's generated code reads, and the parser must accept exactly what protobuf
// accepts, with the tensor data found across any slicing of the received bytes.
#include "myops/wire/tensor_wire.h"

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include "differential.h"

namespace myops::wire {
namespace {

namespace v1 = ::myops::v1;
using google::protobuf::util::MessageDifferencer;

constexpr int kInput = v1::ScaleShiftRequest::kInputFieldNumber;

std::string Flatten(const grpc::ByteBuffer& buffer) {
  std::string out;
  EXPECT_TRUE(wire::Flatten(buffer, &out));
  return out;
}

// `bytes` as a ByteBuffer of slices of the given sizes (the last one takes the rest).
grpc::ByteBuffer Sliced(const std::string& bytes, const std::vector<size_t>& sizes) {
  std::vector<grpc::Slice> slices;
  size_t at = 0;
  for (size_t size : sizes) {
    if (at >= bytes.size()) break;
    size = std::min(size, bytes.size() - at);
    slices.emplace_back(bytes.data() + at, size);
    at += size;
  }
  slices.emplace_back(bytes.data() + at, bytes.size() - at);
  return grpc::ByteBuffer(slices.data(), slices.size());
}

grpc::ByteBuffer OneSlice(const std::string& bytes) { return Sliced(bytes, {}); }

v1::ScaleShiftRequest SampleRequest(size_t data_bytes) {
  v1::ScaleShiftRequest request;
  request.mutable_input()->set_dtype(v1::DTYPE_FLOAT16);
  request.mutable_input()->add_shape(static_cast<int64_t>(data_bytes / 2));
  std::string data(data_bytes, '\0');
  for (size_t i = 0; i < data_bytes; ++i) data[i] = static_cast<char>(i * 7 + 3);
  request.mutable_input()->set_data(data);
  request.set_alpha(2.5);
  request.set_beta(-1.0);
  request.set_device("cpu");
  request.set_request_id(77);
  return request;
}

// Parses with ParseWithTensorData and puts the data back, for comparison with protobuf.
bool ParseWhole(const grpc::ByteBuffer& bytes, v1::ScaleShiftRequest* request) {
  TensorData data;
  if (!ParseWithTensorData(bytes, kInput, request, &data).ok()) return false;
  EXPECT_TRUE(request->input().data().empty());
  std::string copy(data.size(), '\0');
  data.CopyTo(copy.data());
  std::string appended = "head:";
  data.AppendTo(&appended);
  EXPECT_EQ(appended, "head:" + copy);
  if (!copy.empty()) request->mutable_input()->set_data(copy);
  return true;
}

TEST(TensorWireTest, EncodingIsWhatProtobufReads) {
  for (size_t n : {size_t{0}, size_t{2}, size_t{300}, size_t{1} << 20}) {
    const v1::ScaleShiftRequest expected = SampleRequest(n);
    v1::Tensor head = expected.input();
    head.clear_data();
    v1::ScaleShiftRequest rest = expected;
    rest.clear_input();
    const grpc::ByteBuffer encoded =
        EncodeWithTensorData(kInput, head, grpc::Slice(expected.input().data()), rest);
    v1::ScaleShiftRequest parsed;
    ASSERT_TRUE(parsed.ParseFromString(Flatten(encoded))) << n;
    EXPECT_TRUE(MessageDifferencer::Equals(parsed, expected)) << n;
  }
}

TEST(TensorWireTest, DataSliceIsReferencedNotCopied) {
  const std::string data(4096, 'x');
  grpc::Slice slice(data);
  v1::Tensor head;
  head.set_dtype(v1::DTYPE_FLOAT32);
  head.add_shape(1024);
  const grpc::ByteBuffer encoded =
      EncodeWithTensorData(kInput, head, slice, v1::ScaleShiftRequest());
  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(encoded.Dump(&slices).ok());
  ASSERT_EQ(slices.size(), 3u);
  EXPECT_EQ(slices[1].begin(), slice.begin());
}

TEST(TensorWireTest, ParsesEverySlicingLikeProtobuf) {
  const v1::ScaleShiftRequest expected = SampleRequest(1000);
  const std::string bytes = expected.SerializeAsString();
  std::mt19937 rng(7);
  std::vector<std::vector<size_t>> slicings = {{}, {1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, {3, 500}};
  for (int i = 0; i < 200; ++i) {
    std::vector<size_t> sizes;
    for (size_t total = 0; total < bytes.size();) {
      sizes.push_back(std::uniform_int_distribution<size_t>(0, 64)(rng));
      total += sizes.back();
    }
    slicings.push_back(sizes);
  }
  for (const auto& sizes : slicings) {
    v1::ScaleShiftRequest parsed;
    ASSERT_TRUE(ParseWhole(Sliced(bytes, sizes), &parsed));
    EXPECT_TRUE(MessageDifferencer::Equals(parsed, expected));
  }
}

TEST(TensorWireTest, ContiguousOnlyForOneSpan) {
  const std::string bytes = SampleRequest(1000).SerializeAsString();
  v1::ScaleShiftRequest request;
  TensorData data;
  ASSERT_TRUE(ParseWithTensorData(OneSlice(bytes), kInput, &request, &data).ok());
  ASSERT_NE(data.contiguous(), nullptr);
  EXPECT_EQ(std::memcmp(data.contiguous(), SampleRequest(1000).input().data().data(), 1000), 0);
  ASSERT_TRUE(ParseWithTensorData(Sliced(bytes, {100}), kInput, &request, &data).ok());
  EXPECT_EQ(data.contiguous(), nullptr);
  EXPECT_EQ(data.size(), 1000u);

  ASSERT_TRUE(ParseWithTensorData(OneSlice(""), kInput, &request, &data).ok());
  EXPECT_EQ(data.size(), 0u);
  EXPECT_NE(data.contiguous(), nullptr);
  EXPECT_FALSE(request.has_input());
}

TEST(TensorWireTest, MergesRepeatedTensorFieldsAndKeepsUnknownFields) {
  v1::ScaleShiftRequest first = SampleRequest(8);
  v1::ScaleShiftRequest second;
  second.mutable_input()->add_shape(3);  // Repeated shape appends; data stays the first's.
  second.mutable_input()->set_dtype(v1::DTYPE_FLOAT32);
  second.set_alpha(9.0);
  std::string bytes = first.SerializeAsString() + second.SerializeAsString();
  bytes += std::string("\xa0\x06\x2a", 3);  // Unknown field 100, varint 42.
  v1::ScaleShiftRequest expected;
  ASSERT_TRUE(expected.ParseFromString(bytes));
  v1::ScaleShiftRequest parsed;
  ASSERT_TRUE(ParseWhole(Sliced(bytes, {5, 5, 5}), &parsed));
  EXPECT_TRUE(MessageDifferencer::Equals(parsed, expected));
  EXPECT_EQ(parsed.input().shape_size(), 2);

  v1::ScaleShiftRequest third;
  third.mutable_input()->set_data("zz");  // A later data wins.
  bytes += third.SerializeAsString();
  ASSERT_TRUE(expected.ParseFromString(bytes));
  ASSERT_TRUE(ParseWhole(OneSlice(bytes), &parsed));
  EXPECT_TRUE(MessageDifferencer::Equals(parsed, expected));
  EXPECT_EQ(parsed.input().data(), "zz");
}

// Differential: for every prefix and many mutations of a valid message, the parser
// accepts exactly when protobuf does, with the same result.
TEST(TensorWireTest, AcceptsExactlyWhatProtobufAccepts) {
  v1::ScaleShiftRequest sample = SampleRequest(40);
  sample.mutable_input()->add_shape(1);
  const std::string valid = sample.SerializeAsString();
  std::vector<std::string> cases = testing::PrefixesAndMutations(valid, 1, 3000, 11);
  cases.push_back(std::string("\x0a\x02\x1a\x05", 4));  // Data longer than its tensor.
  cases.push_back(std::string("\x0b\x0c", 2));          // Field 1 as a group.
  cases.push_back(std::string("\x0c", 1));              // End group without a start.
  cases.push_back(std::string("\x7b\x08\x01\x7c", 4));  // Unknown group 15 {1: 1}.
  cases.push_back(std::string("\x7b\x08\x01\x74", 4));  // Group 15 ended as group 14.
  cases.push_back(std::string("\x7b\x73\x74\x7c", 4));  // Group 14 nested in group 15.
  cases.push_back(std::string(11, '\xff'));             // Overlong varint.
  // Tags and lengths are read as protobuf reads them (a fuzzer found each difference):
  // a tag in at most 5 bytes, its bits beyond 32 dropped; a length in at most 5 bytes,
  // below 2^31.
  cases.push_back(std::string("\x0a\x06\xf8\xfe\xef\xff\x10\x04", 8));  // Tag 2^32 + x.
  cases.push_back(std::string("\x88\x80\x80\x80\x10\x01", 6));          // 2^32 + 8: field 1 varint.
  cases.push_back(std::string("\x90\x80\x80\x80\x80\x00\x01", 7));      // 6-byte tag.
  cases.push_back(std::string("\x22\x81\x80\x80\x80\x00x", 7));         // 6-byte length.
  cases.push_back(std::string("\x22\x81\x80\x80\x80\x08", 6));          // Length 2^31 + 1.
  cases.push_back(std::string("\x0a\x07\x1a\x81\x80\x80\x80\x00x", 9));  // Data's.
  cases.push_back(std::string("\x0a\x82\x80\x80\x80\x00\x08\x01", 8));   // Tensor's.
  testing::ExpectProtobufVerdicts<v1::ScaleShiftRequest>(
      cases, [](const std::string& bytes, v1::ScaleShiftRequest* parsed) {
        return ParseWhole(Sliced(bytes, {7, 3, 11}), parsed);
      });
}

TEST(TensorWireTest, FailedParseLeavesNoData) {
  TensorData data;
  v1::ScaleShiftRequest request;
  ASSERT_TRUE(
      ParseWithTensorData(OneSlice(SampleRequest(100).SerializeAsString()), kInput, &request, &data)
          .ok());
  EXPECT_EQ(data.size(), 100u);
  EXPECT_FALSE(ParseWithTensorData(OneSlice("\x0a\x7f"), kInput, &request, &data).ok());
  EXPECT_EQ(data.size(), 0u);
}

// Crafted heads that protobuf itself would accept, but that cost it many times their
// size (unknown groups, a packed shape of zeros, unknown varints, a huge string): refused
// after at most kMaxHeadBytes were copied, with a message saying so.
TEST(TensorWireTest, HeadsBeyondTheCapAreRefused) {
  const v1::ScaleShiftRequest valid = SampleRequest(64);
  const std::string valid_bytes = valid.SerializeAsString();
  std::string packed_zeros;  // Tensor.shape, packed: 1 MiB of zero varints
  packed_zeros.push_back(0x12);
  AppendVarint(1 << 20, &packed_zeros);
  packed_zeros.append(1 << 20, '\0');
  std::string in_tensor = valid.input().SerializeAsString() + packed_zeros;
  std::string tensor_field;
  tensor_field.push_back(0x0a);
  AppendVarint(in_tensor.size(), &tensor_field);
  tensor_field += in_tensor;
  std::string device(1 << 20, 'x');  // field 4, a string
  std::string device_field = "\x22";
  AppendVarint(device.size(), &device_field);
  device_field += device;
  std::string groups, varints;
  for (int i = 0; i < (1 << 19); ++i) groups += "\x33\x34";  // empty unknown group 6
  for (int i = 0; i < (1 << 19); ++i) varints += std::string("\x30\x00", 2);  // field 6 = 0
  for (const std::string& crafted :
       {valid_bytes + groups, valid_bytes + varints, tensor_field, valid_bytes + device_field}) {
    v1::ScaleShiftRequest by_protobuf;
    ASSERT_TRUE(by_protobuf.ParseFromString(crafted));  // The documented difference.
    v1::ScaleShiftRequest request;
    TensorData data;
    const absl::Status status =
        ParseWithTensorData(Sliced(crafted, {7, 1000}), kInput, &request, &data);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(status.message().find("fields other than the tensor data take more than 65536"),
              absl::string_view::npos)
        << status;
    EXPECT_EQ(data.size(), 0u);
  }
  // Up to the cap, heads parse.
  v1::ScaleShiftRequest big_head = valid;
  big_head.set_device(std::string(kMaxHeadBytes - 200, 'y'));
  v1::ScaleShiftRequest parsed;
  ASSERT_TRUE(ParseWhole(Sliced(big_head.SerializeAsString(), {3, 5000}), &parsed));
  EXPECT_TRUE(MessageDifferencer::Equals(parsed, big_head));
  // And a malformed message is called invalid, not too large.
  TensorData data;
  const absl::Status invalid = ParseWithTensorData(OneSlice("\x0a\x7f"), kInput, &parsed, &data);
  EXPECT_NE(invalid.message().find("the 2 bytes are not a valid myops.v1.ScaleShiftRequest"),
            absl::string_view::npos)
      << invalid;
}

}  // namespace
}  // namespace myops::wire
