// Tests of myops::wire::ParseWithDataField on inference.ModelInferRequest (its
// raw_input_contents left in the received slices): the message and the values must be
// protobuf's own parse of the same bytes, for any slicing, and the verdict the same for
// any bytes; and the gather of a value out of its pieces (DataFieldValues::CopyTo, which
// streams past 16 MiB) must be exact for any piece sizes and destination alignment.
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "differential.h"
#include "kserve/v2/grpc_predict_v2.pb.h"
#include "myops/wire/tensor_wire.h"

namespace myops::wire {
namespace {

using google::protobuf::util::MessageDifferencer;
using inference::ModelInferRequest;

constexpr int kRaw = ModelInferRequest::kRawInputContentsFieldNumber;

// `bytes` as a ByteBuffer of slices of the given sizes, cycling through them.
grpc::ByteBuffer Sliced(const std::string& bytes, const std::vector<size_t>& sizes) {
  std::vector<grpc::Slice> slices;
  size_t at = 0;
  for (size_t k = 0; at < bytes.size(); ++k) {
    const size_t size =
        sizes.empty() ? bytes.size() : std::min(sizes[k % sizes.size()], bytes.size() - at);
    slices.emplace_back(bytes.data() + at, size);
    at += size;
  }
  return grpc::ByteBuffer(slices.data(), slices.size());
}

std::string Pattern(size_t n, int seed) {
  std::string out(n, '\0');
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<char>(i * 131 + seed + (i >> 9));
  return out;
}

ModelInferRequest Sample() {
  ModelInferRequest r;
  r.set_model_name("myops::scale_shift");
  r.set_id("req-1");
  for (const char* name : {"x", "y", "z"}) {
    auto* in = r.add_inputs();
    in->set_name(name);
    in->set_datatype("FP32");
    in->add_shape(2);
  }
  r.add_inputs()->mutable_contents()->add_fp32_contents(1.5f);  // typed contents too
  (*r.mutable_parameters())["alpha"].set_double_param(2.0);
  (*r.mutable_parameters())["beta"].set_double_param(-1.0);
  r.add_outputs()->set_name("output__0");
  r.add_raw_input_contents("");
  r.add_raw_input_contents(Pattern(5, 1));
  r.add_raw_input_contents(Pattern(1000, 2));
  return r;
}

// Parses `bytes` with ParseWithDataField and puts the values back into the message.
bool ParseWhole(const grpc::ByteBuffer& bytes, ModelInferRequest* request) {
  DataFieldValues values;
  if (!ParseWithDataField(bytes, kRaw, request, &values).ok()) {
    EXPECT_EQ(values.count(), 0u);
    return false;
  }
  EXPECT_EQ(request->raw_input_contents_size(), 0);
  for (size_t k = 0; k < values.count(); ++k) {
    std::string copy(values.size(k), '\0');
    values.CopyTo(k, copy.data());
    request->add_raw_input_contents(copy);
  }
  return true;
}

TEST(DataFieldTest, ParsesEverySlicingLikeProtobuf) {
  const ModelInferRequest expected = Sample();
  // Raw contents between other fields, in any order: protobuf keeps their order.
  const std::string bytes = expected.SerializeAsString() +
                            std::string(
                                "\x3a\x03"
                                "abc",
                                5) +                      // a fourth raw value
                            std::string("\x0a\x01m", 3);  // model_name again: last wins
  ModelInferRequest want;
  ASSERT_TRUE(want.ParseFromString(bytes));
  std::mt19937 rng(3);
  std::vector<std::vector<size_t>> slicings = {{}, {1}, {2, 7}, {4096}};
  for (int i = 0; i < 100; ++i) {
    slicings.push_back({std::uniform_int_distribution<size_t>(0, 80)(rng),
                        std::uniform_int_distribution<size_t>(1, 300)(rng)});
  }
  for (const auto& sizes : slicings) {
    ModelInferRequest parsed;
    ASSERT_TRUE(ParseWhole(Sliced(bytes, sizes), &parsed));
    EXPECT_TRUE(MessageDifferencer::Equals(parsed, want));
  }
}

// In one slice or in many, each value's size and bytes are the ones sent, the empty one
// included.
TEST(DataFieldTest, ValuesCopyOutWhateverTheirPieces) {
  const std::string bytes = Sample().SerializeAsString();
  for (const std::vector<size_t>& sizes : {std::vector<size_t>{}, std::vector<size_t>{100}}) {
    ModelInferRequest request;
    DataFieldValues values;
    ASSERT_TRUE(ParseWithDataField(Sliced(bytes, sizes), kRaw, &request, &values).ok());
    ASSERT_EQ(values.count(), 3u);
    EXPECT_EQ(values.size(0), 0u);
    values.CopyTo(0, nullptr);  // nothing to copy, nothing touched
    ASSERT_EQ(values.size(2), 1000u);
    std::string copy(1000, '\0');
    values.CopyTo(2, copy.data());
    EXPECT_EQ(copy, Pattern(1000, 2));
  }
}

// Differential: every prefix and many mutations of a valid message get protobuf's
// verdict, and when accepted its message.
TEST(DataFieldTest, AcceptsExactlyWhatProtobufAccepts) {
  const std::string valid = Sample().SerializeAsString();
  std::vector<std::string> cases = testing::PrefixesAndMutations(valid, 7, 2000, 5);
  cases.push_back(
      std::string("\x3a\x05"
                  "ab",
                  4));                                          // A raw value past the end.
  cases.push_back(std::string("\x38\x05", 2));                  // Field 7 as a varint: unknown.
  cases.push_back(std::string("\x3b\x08\x01\x3c", 4));          // Field 7 as a group: unknown.
  cases.push_back(std::string("\x7b\x3a\x01x\x7c", 5));         // A raw-like field in a group.
  cases.push_back(std::string("\x3c", 1));                      // End group without a start.
  cases.push_back(std::string("\x3a\x81\x80\x80\x80\x08", 6));  // Length 2^31 + 1.
  testing::ExpectProtobufVerdicts<ModelInferRequest>(
      cases, [](const std::string& bytes, ModelInferRequest* parsed) {
        return ParseWhole(Sliced(bytes, {7, 3, 11}), parsed);
      });
}

// Past the streaming threshold (16 MiB) the gather uses streaming stores: exact for pieces
// of odd sizes and addresses, into destinations of any alignment, as below it.
TEST(DataFieldTest, GathersLargeValuesExactly) {
  for (size_t n : {size_t{3} << 20, (size_t{17} << 20) + 13}) {
    const std::string data = Pattern(n, 9);
    ModelInferRequest r;
    r.set_model_name("m");
    r.add_raw_input_contents(data);
    const std::string bytes = r.SerializeAsString();
    ModelInferRequest parsed;
    DataFieldValues values;
    ASSERT_TRUE(ParseWithDataField(Sliced(bytes, {65521, 8191, 3}), kRaw, &parsed, &values).ok());
    ASSERT_EQ(values.count(), 1u);
    ASSERT_EQ(values.size(0), n);
    std::vector<char> out(n + 64 + 2);
    for (size_t offset : {size_t{0}, size_t{1}, size_t{17}, size_t{63}}) {
      std::memset(out.data(), 0x5a, out.size());
      values.CopyTo(0, out.data() + offset);
      EXPECT_EQ(std::memcmp(out.data() + offset, data.data(), n), 0) << n << " at +" << offset;
      EXPECT_EQ(out[offset + n], 0x5a) << "wrote past the end";
      if (offset > 0) EXPECT_EQ(out[offset - 1], 0x5a) << "wrote before the start";
    }
  }
}

TEST(DataFieldTest, FailedParseLeavesNoValues) {
  ModelInferRequest request;
  DataFieldValues values;
  ASSERT_TRUE(
      ParseWithDataField(Sliced(Sample().SerializeAsString(), {}), kRaw, &request, &values).ok());
  EXPECT_EQ(values.count(), 3u);
  const absl::Status refused = ParseWithDataField(Sliced("\x3a\x7f", {}), kRaw, &request, &values);
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("not a valid inference.ModelInferRequest"), std::string::npos);
  EXPECT_EQ(values.count(), 0u);
}

}  // namespace
}  // namespace myops::wire
