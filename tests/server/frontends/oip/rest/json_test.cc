// The Open Inference Protocol's REST bodies (server/src/frontends/oip/rest/json.h) and its HTTP
// status table (rest/respond.h): body splitting, request parsing with JSON and binary
// data, the arguments they become, and response encoding.
#include "frontends/oip/rest/json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "arg_info.h"
#include "frontends/oip/rest/respond.h"

namespace myops::server::kserve {
namespace {

using ::testing::HasSubstr;

constexpr char kModel[] = "myops::scale_shift";

using testing::Arg;

OpInfo ScaleShift() {
  OpInfo op;
  op.name = kModel;
  op.args = {Arg("x", "Tensor", ArgKind::kTensor), Arg("alpha", "float", ArgKind::kFloat),
             Arg("beta", "float", ArgKind::kFloat)};
  op.returns = {Arg("", "Tensor", ArgKind::kTensor)};
  return op;
}

absl::Status Parse(absl::string_view json, RestInferRequest* out, absl::string_view binary = "") {
  return ParseInferRequestJson(kModel, BodyParts{json, binary}, TensorLimits{}, out);
}

template <typename T>
std::vector<T> Elements(const InputTensor& in) {
  std::vector<T> out(static_cast<size_t>(in.count));
  std::memcpy(out.data(), in.data, out.size() * sizeof(T));
  return out;
}

TEST(KServeJson, SplitBodyByHeaderLength) {
  EXPECT_EQ(SplitBody("{}abc", std::nullopt)->json, "{}abc");
  auto parts = SplitBody("{}abc", "2");
  ASSERT_TRUE(parts.ok());
  EXPECT_EQ(parts->json, "{}");
  EXPECT_EQ(parts->binary, "abc");
  for (const char* bad : {"6", "-1", "", "2x", " 2", "99999999999999999999999"}) {
    auto split = SplitBody("{}abc", bad);
    EXPECT_EQ(split.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(KServeJson, NestedJsonDataIsFlattenedRowMajor) {
  RestInferRequest request;
  ASSERT_TRUE(Parse(R"({"id": "r1", "inputs": [{"name": "x", "datatype": "INT16",
                  "shape": [2, 2], "data": [[1, -2], [300, 4]]}],
                  "parameters": {"alpha": 2, "beta": -0.5, "binary_data_output": true},
                  "outputs": [{"name": "output__0", "parameters": {"binary_data": false}}]})",
                    &request)
                  .ok());
  EXPECT_EQ(request.id, "r1");
  ASSERT_EQ(request.inputs.size(), 1u);
  EXPECT_EQ(request.inputs[0].shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(Elements<int16_t>(request.inputs[0]), (std::vector<int16_t>{1, -2, 300, 4}));
  EXPECT_TRUE(request.binary_data_output);
  ASSERT_EQ(request.parameters.size(), 2u);
  EXPECT_EQ(request.parameters[0].kind, Parameter::Kind::kUint64);  // JSON 2: unsigned
  EXPECT_EQ(request.parameters[1].kind, Parameter::Kind::kDouble);
  EXPECT_EQ(request.outputs, (std::vector<std::string>{"output__0"}));
  EXPECT_EQ(request.output_binary[0], std::optional<bool>(false));
}

TEST(KServeJson, BinaryDataIsAViewOfTheBody) {
  const float data[] = {1.5f, -2.0f, 3.0f};
  const absl::string_view binary(reinterpret_cast<const char*>(data), sizeof(data));
  RestInferRequest request;
  ASSERT_TRUE(Parse(R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [3],
                  "parameters": {"binary_data_size": 12}}]})",
                    &request, binary)
                  .ok());
  EXPECT_EQ(request.inputs[0].data, binary.data());
  auto args = InferArguments(ScaleShift(), &request);
  ASSERT_TRUE(args.ok()) << args.status();
  EXPECT_EQ((*args)[0].value.tensor.data, binary.data());
  EXPECT_EQ((*args)[0].value.tensor.bytes, 12);
}

// The binary part follows a JSON header of any length, so an FP32 input may start at an
// odd address: it is copied to aligned memory (operators may assume aligned elements);
// an aligned one stays a view.
TEST(KServeJson, MisalignedBinaryInputsAreCopiedAligned) {
  const float values[] = {1.5f, -2.0f, 3.0f};
  alignas(16) char body[1 + sizeof(values)];
  std::memcpy(body + 1, values, sizeof(values));
  const absl::string_view misaligned(body + 1, sizeof(values));
  RestInferRequest request;
  ASSERT_TRUE(Parse(R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [3],
                  "parameters": {"binary_data_size": 12}}]})",
                    &request, misaligned)
                  .ok());
  const auto* data = static_cast<const char*>(request.inputs[0].data);
  EXPECT_NE(data, misaligned.data());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(data) % alignof(float), 0u);
  EXPECT_EQ(std::memcmp(data, values, sizeof(values)), 0);
}

TEST(KServeJson, MalformedRequestsNameWhatIsWrong) {
  const struct {
    const char* json;
    const char* binary;
    const char* message;
  } cases[] = {
      {"{", "", "not valid JSON"},
      {"3", "", "not a JSON object"},
      {R"({"inputs": 3})", "", "has no 'inputs' array"},
      {R"({"inputs": [3]})", "", "inputs[0] of the request for model myops::scale_shift is not"},
      {R"({"inputs": [{"datatype": "FP32", "shape": [1], "data": [1]}]})", "",
       "has no string 'name'"},
      {R"({"inputs": [{"name": "x", "shape": [1], "data": [1]}]})", "",
       "input 'x' of model myops::scale_shift has no string 'datatype'"},
      {R"({"inputs": [{"name": "x", "datatype": "FP32", "data": [1]}]})", "", "has no 'shape'"},
      {R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1.5], "data": [1]}]})", "",
       "'shape' that is not all integers"},
      {R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [4611686018427387904, 4],
          "data": []}]})",
       "", "more elements than fit in int64"},
      {R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [9223372036854775807],
          "data": []}]})",
       "", "has a dimension of 9223372036854775807, too large"},
      {R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1000000000000], "data": []}]})",
       "", "this server's limits are"},
      {R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [2]}]})", "",
       "has neither 'data' nor binary_data_size"},
      {R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [2], "data": [1, [2, 3]]}]})", "",
       "has more than 2 elements in 'data' but shape [2] needs 2"},
      {R"({"inputs": [{"name": "x", "datatype": "UINT8", "shape": [1], "data": [-1]}]})", "",
       "data[0] is -1; UINT8 takes integers from 0 to 255"},
      {R"({"inputs": [{"name": "x", "datatype": "INT64", "shape": [1],
          "data": [9223372036854775808]}]})",
       "", "INT64 takes integers from -9223372036854775808 to 9223372036854775807"},
      {R"({"inputs": [{"name": "x", "datatype": "INT32", "shape": [1], "data": [1.0]}]})", "",
       "data[0] is 1.0; INT32 takes integers"},
      {R"({"inputs": [{"name": "x", "datatype": "BF16", "shape": [1], "data": [1.0]}]})", "",
       "is BF16, which travels only as binary data"},
      {R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1], "data": [1],
          "parameters": {"binary_data_size": 4}}]})",
       "abcd", "has both 'data' and binary_data_size"},
      {R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [2],
          "parameters": {"binary_data_size": -8}}]})",
       "", "binary_data_size that is not a non-negative integer"},
      {R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [2],
          "parameters": {"binary_data_size": 4}}]})",
       "abcd", "has 4 bytes of binary data but shape [2] of FP32 needs exactly 8"},
      {R"({"inputs": [], "parameters": {"binary_data_output": 1}})", "",
       "binary_data_output that is not a bool"},
      {R"({"inputs": [], "id": 7})", "", "has an 'id' that is not a string"},
      {R"({"inputs": [], "outputs": [{"name": "o", "parameters": {"binary_data": "yes"}}]})", "",
       "output 'o' of the request for model myops::scale_shift has a binary_data parameter"},
  };
  for (const auto& c : cases) {
    RestInferRequest request;
    const absl::Status status = Parse(c.json, &request, c.binary);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << c.json;
    EXPECT_THAT(status.message(), HasSubstr(c.message)) << c.json;
  }
}

// An input in a shared memory region obeys the element limit (its bytes: the region's).
TEST(KServeJson, RegionInputsObeyTheElementLimit) {
  TensorLimits limits;
  limits.max_elements = 8;
  limits.max_bytes = 16;  // the message's: not a region tensor's
  auto input = [](int n) {
    return absl::StrCat(R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [)", n,
                        R"(], "parameters": {"shared_memory_region": "r",
                        "shared_memory_byte_size": )",
                        4 * n, "}}]}");
  };
  RestInferRequest ok, refused;
  EXPECT_TRUE(ParseInferRequestJson(kModel, BodyParts{input(8), ""}, limits, &ok).ok());
  const absl::Status status =
      ParseInferRequestJson(kModel, BodyParts{input(9), ""}, limits, &refused);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_NE(status.message().find("9 elements"), absl::string_view::npos) << status;
}

TEST(KServeJson, DeepNestingIsRefusedBeforeParsing) {
  RestInferRequest request;
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_THAT(Parse(deep, &request).message(), HasSubstr("more than 64 deep"));
  // Brackets inside strings do not count.
  EXPECT_TRUE(Parse(R"({"inputs": [], "id": ")" + std::string(100, '[') + "\"}", &request).ok());
}

TEST(KServeJson, ArgumentsFollowTheSharedRules) {
  RestInferRequest request;
  ASSERT_TRUE(Parse(R"({"inputs": [{"name": "x", "datatype": "FP64", "shape": [1], "data": [2]},
                  {"name": "alpha", "datatype": "BOOL", "shape": [1], "data": [true]}]})",
                    &request)
                  .ok());
  auto args = InferArguments(ScaleShift(), &request);
  EXPECT_THAT(args.status().message(),
              HasSubstr("input 'alpha' of model myops::scale_shift is BOOL; argument 'alpha'"));
  RestInferRequest params;
  ASSERT_TRUE(Parse(R"({"inputs": [], "parameters": {"alpha": [1], "other": {}}})", &params).ok());
  args = InferArguments(ScaleShift(), &params);
  EXPECT_THAT(args.status().message(),
              HasSubstr("parameter 'alpha' of model myops::scale_shift is a JSON array"));
}

OutputTensor Output(const char* name, const char* datatype, std::vector<int64_t> shape,
                    std::string bytes) {
  OutputTensor o;
  o.name = name;
  o.type = FindDatatype(datatype);
  o.shape = std::move(shape);
  o.owned = std::move(bytes);
  return o;
}

template <typename T>
std::string Bytes(std::initializer_list<T> values) {
  return std::string(reinterpret_cast<const char*>(std::data(values)), values.size() * sizeof(T));
}

TEST(KServeJson, ResponsesCarryJsonDataOrBinaryParts) {
  RestInferRequest request;
  request.id = "q";
  request.outputs = {"a", "b", "c", "d", "e"};
  request.output_binary = {std::nullopt, true, false, false, false};
  std::vector<OutputTensor> outputs;
  outputs.push_back(Output("a", "INT8", {2}, Bytes<int8_t>({-3, 4})));
  outputs.push_back(Output("b", "FP32", {1}, Bytes<float>({1.5f})));
  outputs.push_back(Output("c", "FP16", {2}, Bytes<uint16_t>({0x3c00, 0xc000})));  // 1, -2
  outputs.push_back(Output("d", "BF16", {1}, Bytes<uint16_t>({0x3fc0})));          // 1.5
  outputs.push_back(Output("e", "FP64", {1}, Bytes<double>({std::nan("")})));
  const RestInferResponse r = EncodeInferResponseJson(kModel, request, outputs);
  EXPECT_EQ(r.json,
            R"({"id":"q","model_name":"myops::scale_shift","model_version":"1","outputs":[)"
            R"({"data":[-3,4],"datatype":"INT8","name":"a","shape":[2]},)"
            R"({"datatype":"FP32","name":"b","parameters":{"binary_data_size":4},"shape":[1]},)"
            R"({"data":[1.0,-2.0],"datatype":"FP16","name":"c","shape":[2]},)"
            R"({"data":[1.5],"datatype":"BF16","name":"d","shape":[1]},)"
            R"({"data":[null],"datatype":"FP64","name":"e","shape":[1]}]})");
  // a, c, d and e go as JSON: 2 + 2 + 1 + 1 elements.
  EXPECT_EQ(JsonResponseBytes(request, outputs), 6 * kJsonBytesPerOutputElement);
  ASSERT_EQ(r.binary.size(), 1u);
  EXPECT_EQ(r.binary[0], outputs[1].owned);
  EXPECT_EQ(r.binary_bytes, 4);
}

TEST(KServeJson, BytesOutputsAndErrorsAreJsonStrings) {
  RestInferRequest request;
  std::vector<OutputTensor> outputs(1);
  outputs[0].name = "s";
  outputs[0].shape = {1};
  outputs[0].owned = std::string("\x05\0\0\0q\"\xff\n!", 9);  // BYTES: length, then bytes
  EXPECT_THAT(EncodeInferResponseJson(kModel, request, outputs).json,
              HasSubstr("\"data\":[\"q\\\"\xEF\xBF\xBD\\n!\"],\"datatype\":\"BYTES\""));
  EXPECT_EQ(ErrorJson("bad \"x\"\n"), R"({"error":"bad \"x\"\n"})");
}

TEST(KServeHttp, StatusTable) {
  using C = absl::StatusCode;
  const std::pair<C, int> table[] = {
      {C::kOk, 200},
      {C::kInvalidArgument, 400},
      {C::kFailedPrecondition, 400},
      {C::kUnauthenticated, 401},
      {C::kPermissionDenied, 403},
      {C::kNotFound, 404},
      {C::kResourceExhausted, 429},
      {C::kUnimplemented, 501},
      {C::kUnavailable, 503},
      {C::kDeadlineExceeded, 504},
      {C::kInternal, 500},
      {C::kCancelled, 499},
  };
  for (const auto& [code, http] : table) {
    EXPECT_EQ(HttpStatusOf(code), http) << absl::StatusCodeToString(code);
  }
}

}  // namespace
}  // namespace myops::server::kserve
