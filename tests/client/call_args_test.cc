// The command-line syntax of operator arguments (client/cpp/cli/call_args.h): every kind
// of value, keywords, random and .npy tensors, and the errors a mistyped word gets.
#include "call_args.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "npy.h"

namespace myops::cli {
namespace {

using client::DType;
using client::Value;
using ::testing::HasSubstr;

Value Parse(const std::string& text) {
  absl::StatusOr<Value> value = ParseValue(text, 1);
  EXPECT_TRUE(value.ok()) << text << ": " << value.status();
  return value.ok() ? *std::move(value) : Value();
}

std::string Error(const std::string& text) {
  absl::StatusOr<Value> value = ParseValue(text, 1);
  EXPECT_EQ(value.status().code(), absl::StatusCode::kInvalidArgument) << text;
  return std::string(value.status().message());
}

TEST(CallArgsTest, ScalarsListsAndNone) {
  EXPECT_EQ(Parse("3").int_value(), 3);
  EXPECT_EQ(Parse("-2").int_value(), -2);
  EXPECT_EQ(Parse("2.0").float_value(), 2.0);
  EXPECT_EQ(Parse("1e-3").float_value(), 1e-3);
  EXPECT_EQ(Parse("-0.5").float_value(), -0.5);
  EXPECT_TRUE(std::isnan(Parse("nan").float_value()));
  EXPECT_EQ(Parse("-inf").float_value(), -INFINITY);
  EXPECT_TRUE(Parse("true").bool_value());
  EXPECT_FALSE(Parse("false").bool_value());
  EXPECT_TRUE(Parse("none").is_none());
  EXPECT_EQ(Parse("[1,2]").int_list(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(Parse("[ 1, -2 ]").int_list(), (std::vector<int64_t>{1, -2}));
  EXPECT_EQ(Parse("[1,2.5]").float_list(), (std::vector<double>{1.0, 2.5}));
  EXPECT_EQ(Parse("[]").kind(), Value::Kind::kIntList);
  EXPECT_TRUE(Parse("[]").int_list().empty());
  EXPECT_EQ(Parse("dtype:float16").scalar_type(), DType::kFloat16);
  EXPECT_EQ(Parse("str:a=b, c").string_value(), "a=b, c");
  EXPECT_EQ(Parse("str:").string_value(), "");
  EXPECT_EQ(Parse("mean").string_value(), "mean");
}

TEST(CallArgsTest, RandomTensorsAreSeededAndShaped) {
  Value a = Parse("2x3:float32");
  ASSERT_EQ(a.kind(), Value::Kind::kTensor);
  EXPECT_EQ(a.tensor().dtype, DType::kFloat32);
  EXPECT_EQ(a.tensor().shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a.tensor().size_bytes, 24u);
  EXPECT_TRUE(a.owns_tensors());
  EXPECT_EQ(Parse("2x3:float32").TakeTensor().bytes(), a.TakeTensor().bytes());  // Same seed.
  EXPECT_NE(ParseValue("4:float64", 2)->TakeTensor().bytes(),
            ParseValue("4:float64", 3)->TakeTensor().bytes());
  EXPECT_TRUE(Parse(":float64").tensor().shape.empty());
  EXPECT_EQ(Parse("0x5:float16").tensor().size_bytes, 0u);
  const Value ints = Parse("3x2:int64");
  EXPECT_EQ(ints.tensor().dtype, DType::kInt64);
  EXPECT_EQ(ints.tensor().size_bytes, 48u);
  EXPECT_EQ(Parse("dtype:bool").scalar_type(), DType::kBool);
  Value list = Parse("[2:float32,3:bfloat16]");
  ASSERT_EQ(list.kind(), Value::Kind::kTensorList);
  ASSERT_EQ(list.tensor_list().size(), 2u);
  EXPECT_EQ(list.tensor_list()[1].dtype, DType::kBFloat16);
  EXPECT_NE(list.tensor_list()[0].size_bytes, 0u);
}

TEST(CallArgsTest, NpyFilesAreRead) {
  const std::string path = ::testing::TempDir() + "/call_args_test.npy";
  const float values[3] = {1.0f, 2.0f, 3.0f};
  ASSERT_TRUE(WriteNpyFile(path, {DType::kFloat32, {3}, values, sizeof values}).ok());
  Value t = Parse(path);
  ASSERT_EQ(t.kind(), Value::Kind::kTensor);
  EXPECT_EQ(t.tensor().shape, (std::vector<int64_t>{3}));
  Value list = Parse("[" + path + "," + path + "]");
  EXPECT_EQ(list.tensor_list().size(), 2u);
  std::remove(path.c_str());
  absl::StatusOr<Value> missing = ParseValue(path, 0);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
}

TEST(CallArgsTest, MistypedWordsSayWhatIsAccepted) {
  EXPECT_THAT(Error("2x3:float33"), HasSubstr("unknown dtype"));
  EXPECT_THAT(Error("2x-3:float32"), HasSubstr("a tensor is SHAPE:DTYPE"));
  EXPECT_THAT(Error("2xx:float32"), HasSubstr("is not a size"));
  EXPECT_THAT(Error("[1,2"), HasSubstr("must end with ']'"));
  EXPECT_THAT(Error("[1,true]"), HasSubstr("lists hold ints, floats or tensors"));
  EXPECT_THAT(Error("[1,2:float32]"), HasSubstr("mixes tensors and numbers"));
  EXPECT_THAT(Error("dtype:int3"), HasSubstr("unknown dtype"));
  EXPECT_THAT(Error("1.2.3"), HasSubstr("expected PATH.npy, SHAPE:DTYPE"));
  EXPECT_THAT(Error("a b"), HasSubstr("not a value"));
}

TEST(CallArgsTest, KeywordsFollowPositionals) {
  absl::StatusOr<CallArgs> args =
      ParseCallArgs({"2:float32", "2.0", "beta=1", "name=str:x=y", "str:p=q"}, 0);
  EXPECT_THAT(args.status().message(), HasSubstr("argument 5 (\"str:p=q\") is positional"));
  args = ParseCallArgs({"2:float32", "str:p=q", "beta=1", "mode=str:x=y", "t=3:float64"}, 0);
  ASSERT_TRUE(args.ok()) << args.status();
  ASSERT_EQ(args->positional.size(), 2u);
  EXPECT_EQ(args->positional[1].string_value(), "p=q");
  ASSERT_EQ(args->named.size(), 3u);
  EXPECT_EQ(args->named[0].name, "beta");
  EXPECT_EQ(args->named[0].value.int_value(), 1);
  EXPECT_EQ(args->named[1].value.string_value(), "x=y");
  EXPECT_EQ(args->named[2].value.tensor().shape, (std::vector<int64_t>{3}));
  // Distinct random tensors per argument.
  EXPECT_NE(args->positional[0].tensor().size_bytes, 0u);
  args = ParseCallArgs({"x=2x:float32"}, 0);
  EXPECT_THAT(args.status().message(), HasSubstr("argument 1: "));
}

TEST(CallArgsTest, DescribeValueSummarizesEachKind) {
  const float values[2] = {1.5f, -2.0f};
  EXPECT_EQ(DescribeValue(client::TensorView{DType::kFloat32, {2}, values, 8}),
            "float32 [2] (8 bytes): [1.5, -2]");
  EXPECT_EQ(DescribeValue(2.0), "2.0");
  EXPECT_EQ(DescribeValue(2.5), "2.5");
  EXPECT_EQ(DescribeValue(3), "3");
  EXPECT_EQ(DescribeValue(true), "true");
  EXPECT_EQ(DescribeValue(Value()), "none");
  EXPECT_EQ(DescribeValue("s"), "\"s\"");
  EXPECT_EQ(DescribeValue(Value::IntList({1, 2})), "[1, 2]");
  EXPECT_EQ(DescribeValue(DType::kBFloat16), "dtype bfloat16");
  EXPECT_EQ(DescribeValue(std::vector<client::TensorView>{}), "0 tensors");
}

}  // namespace
}  // namespace myops::cli
