// Exported programs, the torch-free half (runtime/program.h): the --program flag, the
// "myops.signature" metadata, and the checks of a call's inputs against it (loading and
// running packages: tests/python/programs).
#include "runtime/program.h"

#include <gtest/gtest.h>

#include "runtime/op_registry.h"
#include "runtime/value.h"

namespace myops::server {
namespace {

TEST(ProgramSpecTest, ParsesNameAndPath) {
  auto spec = ParseProgramSpec("detector=/models/d=1.pt2");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->name, "detector");
  EXPECT_EQ(spec->path, "/models/d=1.pt2");  // split at the first '='
}

TEST(ProgramSpecTest, RefusesWhatIsNotNameEqualsPath) {
  for (const char* text : {"detector", "=x.pt2", "detector=", ""}) {
    auto spec = ParseProgramSpec(text);
    EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_NE(spec.status().message().find("expected NAME=PATH"), std::string::npos) << text;
  }
  for (const char* text : {"ns::op=x.pt2", "a.b=x.pt2", "a b=x.pt2",
                           "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa=x"}) {
    auto spec = ParseProgramSpec(text);
    EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_NE(spec.status().message().find("NAME must be 1-64 letters"), std::string::npos) << text;
  }
}

constexpr char kSignature[] = R"({
  "inputs": [
    {"name": "image", "dtype": "float32",
     "shape": [{"min": 2, "max": 15, "symbol": "s0"}, 3, {"min": 4, "symbol": "s1"}]},
    {"name": "mask", "dtype": "bool", "shape": [{"min": 2, "max": 15, "symbol": "s0"}]}],
  "outputs": [{"name": "y", "dtype": "float16", "shape": [-1, 3]}],
  "ops": ["myops::scale_shift", "torchvision::roi_align"]})";

TEST(ProgramSignatureTest, ParsesInputsOutputsAndOps) {
  auto sig = ParseProgramSignature(kSignature);
  ASSERT_TRUE(sig.ok()) << sig.status();
  ASSERT_EQ(sig->inputs.size(), 2u);
  EXPECT_EQ(sig->inputs[0].name, "image");
  EXPECT_EQ(sig->inputs[0].signature.ToString(), "float32[2..15, 3, 4..]");
  EXPECT_EQ(sig->inputs[0].signature.dims[0].symbol, "s0");
  EXPECT_EQ(sig->inputs[1].signature.ToString(), "bool[2..15]");
  ASSERT_EQ(sig->outputs.size(), 1u);
  EXPECT_EQ(sig->outputs[0].signature.ToString(), "float16[-1, 3]");
  EXPECT_EQ(sig->ops, (std::vector<std::string>{"myops::scale_shift", "torchvision::roi_align"}));
}

TEST(ProgramSignatureTest, RefusesMalformedRecordsSayingWhere) {
  const std::pair<const char*, const char*> cases[] = {
      {"not json", "expected a JSON object"},
      {R"({"inputs": []})", "expected a JSON object"},
      {R"({"inputs": [{"name": "x"}], "outputs": []})", "inputs[0]: expected"},
      {R"({"inputs": [{"name": "x", "dtype": "complex64", "shape": []}], "outputs": []})",
       "inputs[0] ('x'): dtype 'complex64' is not one of"},
      {R"({"inputs": [{"name": "x", "dtype": "int8", "shape": [-1]}], "outputs": []})",
       "inputs[0] ('x'): size -1 (inputs give ranges)"},
      {R"({"inputs": [{"name": "x", "dtype": "int8", "shape": [{"min": 5, "max": 4}]}],
           "outputs": []})",
       "inputs[0] ('x'): range 5..4"},
      {R"({"inputs": [], "outputs": [{"name": "", "dtype": "int8", "shape": []}]})",
       "outputs[0]: empty name"},
      {R"({"inputs": [], "outputs": [], "ops": "myops::scale_shift"})", "\"ops\" must be"},
  };
  for (const auto& [text, message] : cases) {
    auto sig = ParseProgramSignature(text);
    EXPECT_EQ(sig.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_NE(sig.status().message().find(message), std::string::npos)
        << text << " -> " << sig.status().message();
  }
}

// A registry entry of the signature above, as ProgramPackage::Load describes it.
OpInfo Program() {
  OpInfo info;
  info.name = "net";
  info.program = true;
  const ProgramSignature sig = *ParseProgramSignature(kSignature);
  for (const auto& t : sig.inputs) {
    ArgInfo a;
    a.name = t.name;
    a.kind = ArgKind::kTensor;
    a.signature = t.signature;
    info.args.push_back(std::move(a));
  }
  return info;
}

OpCall Call(DType image_dtype, std::vector<int64_t> image, std::vector<int64_t> mask) {
  OpCall call;
  TensorView a, b;
  a.dtype = image_dtype;
  a.shape = std::move(image);
  b.dtype = DType::kBool;
  b.shape = std::move(mask);
  call.args = {Value::Tensor(a), Value::Tensor(b)};
  return call;
}

TEST(CheckProgramInputsTest, AcceptsSizesWithinTheRanges) {
  const OpInfo net = Program();
  EXPECT_TRUE(CheckProgramInputs(net, Call(DType::kFloat32, {2, 3, 4}, {2})).ok());
  EXPECT_TRUE(CheckProgramInputs(net, Call(DType::kFloat32, {15, 3, 1000}, {15})).ok());
}

TEST(CheckProgramInputsTest, RefusesWhatTheExportDoesNotAcceptNamingTheInput) {
  const OpInfo net = Program();
  const std::pair<OpCall, const char*> cases[] = {
      {Call(DType::kFloat64, {2, 3, 4}, {2}),
       "program net: input 'image' has dtype float64; it takes float32[2..15, 3, 4..] (got "
       "float64[2, 3, 4])"},
      {Call(DType::kFloat32, {2, 3}, {2}), "input 'image' has 2 dimensions, not 3"},
      {Call(DType::kFloat32, {16, 3, 4}, {16}), "input 'image' has size 16 in dimension 0"},
      {Call(DType::kFloat32, {1, 3, 4}, {1}), "input 'image' has size 1 in dimension 0"},
      {Call(DType::kFloat32, {2, 4, 4}, {2}), "input 'image' has size 4 in dimension 1"},
      {Call(DType::kFloat32, {2, 3, 3}, {2}), "input 'image' has size 3 in dimension 2"},
      {Call(DType::kFloat32, {2, 3, 4}, {3}),
       "input 'mask' has size 3 in dimension 0, where input 'image' has 2 (the export made "
       "them one size, s0)"},
  };
  for (const auto& [call, message] : cases) {
    const absl::Status s = CheckProgramInputs(net, call);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << message;
    EXPECT_NE(s.message().find(message), std::string::npos) << s.message();
  }
}

}  // namespace
}  // namespace myops::server
