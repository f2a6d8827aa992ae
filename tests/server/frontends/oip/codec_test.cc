// The Open Inference Protocol codec (server/src/frontends/oip/codec.h) on registries made for
// tests: model names, inputs and parameters to arguments, output selection, metadata.
#include "frontends/oip/codec.h"

#include <gmock/gmock.h>
#include <grpcpp/support/proto_buffer_reader.h>
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <memory>
#include <optional>

#include "arg_info.h"
#include "myops/wire/tensor_wire.h"
#include "owned_result.h"

namespace myops::server::kserve {
namespace {

using ::testing::HasSubstr;

using testing::Arg;

// scale_shift(Tensor x, float alpha, float beta) -> Tensor, and an overload with named
// returns, as the registry describes them.
OpRegistry TestRegistry() {
  OpInfo op;
  op.name = "myops::scale_shift";
  op.schema = "myops::scale_shift(Tensor x, float alpha, float beta) -> Tensor";
  op.args = {Arg("x", "Tensor", ArgKind::kTensor), Arg("alpha", "float", ArgKind::kFloat),
             Arg("beta", "float", ArgKind::kFloat)};
  op.returns = {Arg("", "Tensor", ArgKind::kTensor)};
  op.cpu = op.served = true;
  OpInfo pair = op;
  pair.overload = "pair";
  pair.returns = {Arg("lo", "Tensor", ArgKind::kTensor), Arg("hi", "Tensor", ArgKind::kTensor)};
  // lists(Tensor[] xs, Tensor y) -> (Tensor[] parts, Tensor? extra)
  OpInfo lists = op;
  lists.name = "myops::lists";
  lists.args = {Arg("xs", "Tensor[]", ArgKind::kTensorList), Arg("y", "Tensor", ArgKind::kTensor)};
  lists.returns = {Arg("parts", "Tensor[]", ArgKind::kTensorList),
                   Arg("extra", "Tensor?", ArgKind::kTensor)};
  lists.returns[1].optional = true;
  return OpRegistry({op, pair, lists});
}

// The (result, element) pairs of a selection.
std::vector<std::pair<int, int>> Refs(const absl::StatusOr<std::vector<OutputRef>>& selected) {
  std::vector<std::pair<int, int>> refs;
  if (!selected.ok()) return {{-9, -9}};
  for (const OutputRef& r : *selected) refs.emplace_back(r.result, r.element);
  return refs;
}

// The raw contents of `request` as the server receives them: its bytes parsed by
// ParseInferRequest (the values stay in those bytes' slices, which the result holds).
wire::DataFieldValues RawOf(const inference::ModelInferRequest& request) {
  grpc::Slice slice(request.SerializeAsString());
  grpc::ByteBuffer bytes(&slice, 1);
  inference::ModelInferRequest parsed;
  wire::DataFieldValues raw;
  EXPECT_TRUE(ParseInferRequest(bytes, &parsed, &raw).ok());
  EXPECT_EQ(parsed.raw_input_contents_size(), 0);
  return raw;
}

// The request decoded as the gRPC binding decodes it, and its arguments for `op`
// (DecodeInferRequest, then InferArguments); `decoded` holds what their views point into.
absl::StatusOr<std::vector<NamedValue>> DecodeArgs(const OpInfo& op,
                                                   const inference::ModelInferRequest& request,
                                                   const TensorLimits& limits,
                                                   InferRequest* decoded) {
  *decoded = InferRequest();
  if (absl::Status s =
          DecodeInferRequest(request, RawOf(request), op.QualifiedName(), limits, decoded);
      !s.ok()) {
    return s;
  }
  return InferArguments(op, decoded);
}

// The request's timeout as BindInfer reads it (microseconds; 0: none).
absl::StatusOr<int64_t> RequestTimeout(const OpInfo& op,
                                       const inference::ModelInferRequest& request) {
  InferRequest decoded;
  if (absl::Status s =
          DecodeInferRequest(request, RawOf(request), op.QualifiedName(), {}, &decoded);
      !s.ok()) {
    return s;
  }
  InferCall call;
  if (absl::Status s = BindInfer(op, OwnedRegions(), {}, &decoded, &call); !s.ok()) return s;
  return call.timeout_us;
}

// The outputs the request names, as the gRPC binding decodes them (SelectOutputs).
absl::StatusOr<std::vector<OutputRef>> SelectedOutputs(
    const OpInfo& op, const inference::ModelInferRequest& request) {
  InferRequest decoded;
  if (absl::Status s =
          DecodeInferRequest(request, RawOf(request), op.QualifiedName(), {}, &decoded);
      !s.ok()) {
    return s;
  }
  return SelectOutputs(op, decoded.outputs);
}

// An FP32 input `name` of `values`, as raw contents.
void AddRawInput(inference::ModelInferRequest* request, const std::string& name,
                 const std::vector<float>& values) {
  auto* in = request->add_inputs();
  in->set_name(name);
  in->set_datatype("FP32");
  in->add_shape(static_cast<int64_t>(values.size()));
  request->add_raw_input_contents(values.data(), values.size() * sizeof(float));
}

TEST(KServeCodec, ModelNamesAreQualifiedOperatorNames) {
  const OpRegistry registry = TestRegistry();
  EXPECT_EQ(*FindModel(registry, "myops::scale_shift", ""), 0);
  EXPECT_EQ(*FindModel(registry, "myops::scale_shift.pair", "1"), 1);
  EXPECT_EQ(FindModel(registry, "myops.scale_shift", "").status().code(),
            absl::StatusCode::kNotFound);
  auto version = FindModel(registry, "myops::scale_shift", "2");
  EXPECT_EQ(version.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(version.status().message(), HasSubstr("has no version '2'"));
}

TEST(KServeCodec, InputsAndParametersBecomeNamedArguments) {
  const OpRegistry registry = TestRegistry();
  inference::ModelInferRequest request;
  auto* x = request.add_inputs();
  x->set_name("x");
  x->set_datatype("FP32");
  x->add_shape(2);
  x->mutable_contents()->add_fp32_contents(1.5f);
  x->mutable_contents()->add_fp32_contents(2.5f);
  auto* alpha = request.add_inputs();
  alpha->set_name("alpha");
  alpha->set_datatype("INT32");  // an int is a valid float
  alpha->mutable_contents()->add_int_contents(3);
  (*request.mutable_parameters())["beta"].set_double_param(0.25);
  (*request.mutable_parameters())["sequence_id"].set_int64_param(9);  // not an argument
  InferRequest decoded;
  auto args = DecodeArgs(registry.ops()[0], request, {}, &decoded);
  ASSERT_TRUE(args.ok()) << args.status();
  ASSERT_EQ(args->size(), 3u);
  EXPECT_EQ((*args)[0].name, "x");
  EXPECT_EQ((*args)[0].value.tensor.dtype, DType::kFloat32);
  EXPECT_EQ((*args)[0].value.tensor.shape, std::vector<int64_t>{2});
  EXPECT_EQ((*args)[0].value.tensor.data, request.inputs(0).contents().fp32_contents().data());
  EXPECT_EQ((*args)[1].value.kind, Value::Kind::kInt);
  EXPECT_EQ((*args)[1].value.int_value, 3);
  EXPECT_EQ((*args)[2].name, "beta");
  EXPECT_EQ((*args)[2].value.float_value, 0.25);
}

TEST(KServeCodec, NarrowIntegersInTypedContentsAreCopied) {
  const OpRegistry registry = TestRegistry();
  inference::ModelInferRequest request;
  auto* x = request.add_inputs();
  x->set_name("x");
  x->set_datatype("INT16");
  x->add_shape(3);
  for (int v : {-300, 7, 1000}) x->mutable_contents()->add_int_contents(v);
  InferRequest decoded;
  auto args = DecodeArgs(registry.ops()[0], request, {}, &decoded);
  ASSERT_TRUE(args.ok()) << args.status();
  const TensorView& t = (*args)[0].value.tensor;
  ASSERT_EQ(t.bytes, 6);
  int16_t got[3];
  std::memcpy(got, t.data, sizeof got);
  EXPECT_EQ(got[0], -300);
  EXPECT_EQ(got[1], 7);
  EXPECT_EQ(got[2], 1000);
  EXPECT_EQ(decoded.scratch.size(), 1u);
}

TEST(KServeCodec, RefusesMismatchedContents) {
  const OpRegistry registry = TestRegistry();
  InferRequest decoded;
  inference::ModelInferRequest request;
  auto* x = request.add_inputs();
  x->set_name("x");
  x->set_datatype("FP32");
  x->add_shape(3);
  x->mutable_contents()->add_fp32_contents(1);
  auto few = DecodeArgs(registry.ops()[0], request, {}, &decoded);
  EXPECT_THAT(few.status().message(),
              HasSubstr("has 1 elements in fp32_contents but shape [3] needs 3"));
  x->set_datatype("FP16");
  auto half = DecodeArgs(registry.ops()[0], request, {}, &decoded);
  EXPECT_THAT(half.status().message(), HasSubstr("travels only as raw_input_contents"));
  x->clear_contents();
  x->set_datatype("FP32");
  request.add_raw_input_contents(std::string(12, '\0'));
  request.add_raw_input_contents(std::string(4, '\0'));
  auto extra = DecodeArgs(registry.ops()[0], request, {}, &decoded);
  EXPECT_THAT(extra.status().message(), HasSubstr("2 raw_input_contents for 1 inputs"));
  TensorLimits limits;
  limits.max_elements = 2;
  request.mutable_raw_input_contents()->RemoveLast();
  auto over = DecodeArgs(registry.ops()[0], request, limits, &decoded);
  EXPECT_THAT(over.status().message(), HasSubstr("this server's limits are 2 elements"));
}

TEST(KServeCodec, OutputsAreSelectedByName) {
  const OpRegistry registry = TestRegistry();
  const OpInfo& pair = registry.ops()[1];
  EXPECT_EQ(OutputNames(registry.ops()[0]), std::vector<std::string>{"output__0"});
  inference::ModelInferRequest request;
  EXPECT_EQ(Refs(SelectedOutputs(pair, request)),
            (std::vector<std::pair<int, int>>{{0, -1}, {1, -1}}));
  request.add_outputs()->set_name("hi");
  EXPECT_EQ(Refs(SelectedOutputs(pair, request)), (std::vector<std::pair<int, int>>{{1, -1}}));
  request.add_outputs()->set_name("hi");
  EXPECT_THAT(SelectedOutputs(pair, request).status().message(), HasSubstr("requested twice"));
  request.mutable_outputs(1)->set_name("mid");
  EXPECT_THAT(SelectedOutputs(pair, request).status().message(),
              HasSubstr("has no output 'mid' (outputs: lo, hi)"));
}

// Triton's classification extension: "value:index" strings, largest first, BYTES with
// 4-byte little-endian lengths; integers too; other datatypes refused in Triton's words.
TEST(KServeCodec, ClassifyGivesTheTopClassesAsTritonDoes) {
  const int64_t values[] = {7, -2, 40, 3};
  OutputTensor out;
  out.name = "y";
  out.type = DatatypeOf(DType::kInt64);
  out.shape = {4};
  out.is_tensor = true;
  out.tensor_data = values;
  out.tensor_bytes = sizeof values;
  ASSERT_TRUE(Classify(2, &out).ok());
  EXPECT_EQ(std::string(out.datatype()), "BYTES");
  EXPECT_EQ(out.shape, std::vector<int64_t>{2});
  EXPECT_EQ(out.bytes(), std::string("\x04\0\0\0"
                                     "40:2"
                                     "\x03\0\0\0"
                                     "7:0",
                                     15));

  const uint16_t half[] = {0, 1};
  OutputTensor h;
  h.type = DatatypeOf(DType::kFloat16);
  h.is_tensor = true;
  h.tensor_data = half;
  h.tensor_bytes = sizeof half;
  EXPECT_THAT(std::string(Classify(1, &h).message()),
              HasSubstr("class result not available for output due to unsupported type 'FP16'"));

  std::vector<Parameter> params(1);
  params[0].name = "classification";
  params[0].kind = Parameter::Kind::kDouble;
  EXPECT_EQ(ClassificationCount(params, "output 'y'").status().code(),
            absl::StatusCode::kInvalidArgument);
  params[0].kind = Parameter::Kind::kInt64;
  params[0].int64_value = 3;
  EXPECT_EQ(*ClassificationCount(params, "output 'y'"), 3);
  EXPECT_EQ(*ClassificationCount({}, "output 'y'"), 0);
}

TEST(KServeCodec, ElementNames) {
  EXPECT_EQ(ElementName("xs", 12), "xs__12");
  auto split = SplitElementName("output__0__3");
  ASSERT_TRUE(split.has_value());
  EXPECT_EQ(split->name, "output__0");
  EXPECT_EQ(split->index, 3);
  for (const char* bad : {"xs", "xs__", "__1", "xs__01", "xs__1a", "xs__-1", "xs__1234567890"}) {
    EXPECT_FALSE(SplitElementName(bad).has_value()) << bad;
  }
}

TEST(KServeCodec, TensorListArgumentsAreNumberedInputs) {
  const OpRegistry registry = TestRegistry();
  const OpInfo& lists = registry.ops()[2];
  inference::ModelInferRequest request;
  AddRawInput(&request, "xs__1", {3, 4});  // any order
  AddRawInput(&request, "y", {9});
  AddRawInput(&request, "xs__0", {1});
  InferRequest decoded;
  auto args = DecodeArgs(lists, request, {}, &decoded);
  ASSERT_TRUE(args.ok()) << args.status();
  ASSERT_EQ(args->size(), 2u);
  EXPECT_EQ((*args)[0].name, "y");
  EXPECT_EQ((*args)[1].name, "xs");
  const Value& xs = (*args)[1].value;
  ASSERT_EQ(xs.kind, Value::Kind::kTensorList);
  ASSERT_EQ(xs.tensor_list.size(), 2u);
  EXPECT_EQ(xs.tensor_list[0].shape, std::vector<int64_t>{1});
  // Raw contents are copied out of the received bytes, each into its own memory.
  ASSERT_NE(xs.tensor_list[0].data, nullptr);
  EXPECT_EQ(*static_cast<const float*>(xs.tensor_list[0].data), 1.0f);
  EXPECT_EQ(std::memcmp(xs.tensor_list[1].data, request.raw_input_contents(0).data(), 8), 0);
  EXPECT_EQ(xs.tensor_list[1].shape, std::vector<int64_t>{2});

  // A gap, a repeat, the list's own name, a parameter: refused, saying how.
  for (const auto& names :
       std::vector<std::vector<std::string>>{{"xs__0", "xs__2"}, {"xs__0", "xs__0"}, {"xs__1"}}) {
    inference::ModelInferRequest bad;
    for (const std::string& n : names) AddRawInput(&bad, n, {1});
    auto refused = DecodeArgs(lists, bad, {}, &decoded);
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(refused.status().message(), HasSubstr("must be numbered from xs__0 on"));
  }
  inference::ModelInferRequest whole;
  AddRawInput(&whole, "xs", {1});
  EXPECT_THAT(DecodeArgs(lists, whole, {}, &decoded).status().message(),
              HasSubstr("is sent as one input per element, xs__0, xs__1, ..."));
  inference::ModelInferRequest parameter;
  (*parameter.mutable_parameters())["xs"].set_int64_param(1);
  EXPECT_THAT(DecodeArgs(lists, parameter, {}, &decoded).status().message(),
              HasSubstr("send it as inputs xs__0, xs__1, ..."));
  // Not a list: an element name of a Tensor argument is an unknown argument.
  inference::ModelInferRequest not_list;
  AddRawInput(&not_list, "y__0", {1});
  auto unknown = DecodeArgs(lists, not_list, {}, &decoded);
  ASSERT_TRUE(unknown.ok());
  EXPECT_EQ((*unknown)[0].name, "y__0");
  EXPECT_EQ((*unknown)[0].value.kind, Value::Kind::kNone);
}

TEST(KServeCodec, TensorListOutputsAreSelectedWholeOrByElement) {
  const OpRegistry registry = TestRegistry();
  const OpInfo& lists = registry.ops()[2];
  inference::ModelInferRequest request;
  EXPECT_EQ(Refs(SelectedOutputs(lists, request)),
            (std::vector<std::pair<int, int>>{{0, -1}, {1, -1}}));
  request.add_outputs()->set_name("parts__2");
  request.add_outputs()->set_name("extra");
  request.add_outputs()->set_name("parts__0");
  EXPECT_EQ(Refs(SelectedOutputs(lists, request)),
            (std::vector<std::pair<int, int>>{{0, 2}, {1, -1}, {0, 0}}));
  request.add_outputs()->set_name("parts");  // and the whole list: twice
  EXPECT_THAT(SelectedOutputs(lists, request).status().message(), HasSubstr("requested twice"));
  request.mutable_outputs(3)->set_name("extra__0");  // not a list
  EXPECT_THAT(SelectedOutputs(lists, request).status().message(),
              HasSubstr("has no output 'extra__0'"));
  // The whole list first, then one of its elements; one element twice; a hundred
  // distinct elements are no repeat.
  for (const std::vector<std::string>& names :
       std::vector<std::vector<std::string>>{{"parts", "parts__1"}, {"parts__1", "parts__1"}}) {
    inference::ModelInferRequest twice;
    for (const std::string& n : names) twice.add_outputs()->set_name(n);
    EXPECT_THAT(SelectedOutputs(lists, twice).status().message(), HasSubstr("requested twice"))
        << names[0] << ", " << names[1];
  }
  inference::ModelInferRequest many;
  for (int j = 0; j < 100; ++j) many.add_outputs()->set_name("parts__" + std::to_string(j));
  auto selected = SelectedOutputs(lists, many);
  ASSERT_TRUE(selected.ok()) << selected.status();
  EXPECT_EQ(selected->size(), 100u);
}

TEST(KServeCodec, TensorListMetadata) {
  const OpRegistry registry = TestRegistry();
  inference::ModelMetadataResponse meta;
  DescribeModel(registry.ops()[2], &meta);
  ASSERT_EQ(meta.inputs_size(), 2);
  EXPECT_EQ(meta.inputs(0).name(), "xs__0");
  EXPECT_EQ(meta.inputs(0).datatype(), "FP32");
  ASSERT_EQ(meta.outputs_size(), 2);
  EXPECT_EQ(meta.outputs(0).name(), "parts");
  EXPECT_EQ(meta.outputs(0).shape(0), -1);
  EXPECT_EQ(meta.outputs(1).name(), "extra");
}

TEST(KServeCodec, MetadataDescribesArgumentsAndReturns) {
  const OpRegistry registry = TestRegistry();
  inference::ModelMetadataResponse meta;
  DescribeModel(registry.ops()[1], &meta);
  EXPECT_EQ(meta.name(), "myops::scale_shift.pair");
  ASSERT_EQ(meta.inputs_size(), 3);
  EXPECT_EQ(meta.inputs(0).datatype(), "FP32");
  EXPECT_EQ(meta.inputs(0).shape(0), -1);
  EXPECT_EQ(meta.inputs(1).datatype(), "FP64");
  EXPECT_EQ(meta.inputs(1).shape(0), 1);
  ASSERT_EQ(meta.outputs_size(), 2);
  EXPECT_EQ(meta.outputs(1).name(), "hi");
}

TEST(KServeCodec, StatisticsAreTritonsModelStatistics) {
  const OpRegistry registry = TestRegistry();
  inference::ModelStatistics unused;
  DescribeModelStats(registry.ops()[0], ModelStatsSnapshot(), &unused);
  EXPECT_EQ(unused.version(), "1");
  EXPECT_EQ(unused.batch_stats_size(), 0);  // never ran
  ModelStatsSnapshot s;
  s.last_inference_ms = 1234;
  s.inference_count = s.execution_count = 2;
  s.success = {2, 100};
  s.fail = {1, 7};
  s.queue = {2, 10};
  s.compute_input = {2, 20};
  s.compute_infer = {2, 30};
  s.compute_output = {2, 40};
  inference::ModelStatistics out;
  DescribeModelStats(registry.ops()[1], s, &out);
  EXPECT_EQ(out.name(), "myops::scale_shift.pair");
  EXPECT_EQ(out.last_inference(), 1234u);
  EXPECT_EQ(out.inference_count(), 2u);
  EXPECT_EQ(out.execution_count(), 2u);
  const inference::InferStatistics& i = out.inference_stats();
  EXPECT_EQ(i.success().count(), 2u);
  EXPECT_EQ(i.success().ns(), 100u);
  EXPECT_EQ(i.fail().count(), 1u);
  EXPECT_EQ(i.fail().ns(), 7u);
  EXPECT_EQ(i.queue().ns(), 10u);
  EXPECT_EQ(i.compute_input().ns(), 20u);
  EXPECT_EQ(i.compute_infer().ns(), 30u);
  EXPECT_EQ(i.compute_output().ns(), 40u);
  ASSERT_EQ(out.batch_stats_size(), 1);
  EXPECT_EQ(out.batch_stats(0).batch_size(), 1u);
  EXPECT_EQ(out.batch_stats(0).compute_infer().count(), 2u);
  EXPECT_EQ(out.batch_stats(0).compute_infer().ns(), 30u);
}

TEST(KServeCodec, TimeoutParameterIsTheRequestsTimeout) {
  const OpRegistry registry = TestRegistry();
  const OpInfo& op = registry.ops()[0];
  Parameter p;
  p.name = "timeout";
  p.kind = Parameter::Kind::kInt64;
  p.int64_value = 2500;
  EXPECT_EQ(TimeoutParameter(op, p).value(), std::optional<int64_t>(2500));
  p.int64_value = 0;
  EXPECT_EQ(TimeoutParameter(op, p).value(), std::optional<int64_t>(0));
  p.kind = Parameter::Kind::kUint64;
  p.uint64_value = ~uint64_t{0};
  EXPECT_EQ(TimeoutParameter(op, p).value(),
            std::optional<int64_t>(std::numeric_limits<int64_t>::max()));
  for (Parameter::Kind bad : {Parameter::Kind::kDouble, Parameter::Kind::kString}) {
    p.kind = bad;
    EXPECT_THAT(TimeoutParameter(op, p).status().message(),
                HasSubstr("parameter 'timeout' of model myops::scale_shift is the request's "
                          "timeout in microseconds; expected an integer >= 0"));
  }
  p.kind = Parameter::Kind::kInt64;
  p.int64_value = -1;
  EXPECT_EQ(TimeoutParameter(op, p).status().code(), absl::StatusCode::kInvalidArgument);
  p.name = "alpha";  // any other parameter
  EXPECT_EQ(TimeoutParameter(op, p).value(), std::nullopt);
  // An operator's own argument named timeout is that argument's.
  OpInfo own = op;
  own.args.push_back(Arg("timeout", "int", ArgKind::kInt));
  p.name = "timeout";
  EXPECT_EQ(TimeoutParameter(own, p).value(), std::nullopt);

  inference::ModelInferRequest request;
  EXPECT_EQ(RequestTimeout(op, request).value(), 0);
  (*request.mutable_parameters())["timeout"].set_int64_param(40);
  EXPECT_EQ(RequestTimeout(op, request).value(), 40);
  (*request.mutable_parameters())["timeout"].set_string_param("soon");
  EXPECT_FALSE(RequestTimeout(op, request).ok());
}

// A result tensor's memory (held by its owner) lives as long as the response that sends
// it, not as long as the call: the response's slices hold the owner.
TEST(KServeCodec, ResponsesHoldTheirResultTensorsMemory) {
  const OpRegistry registry = TestRegistry();
  const OpInfo& op = registry.ops()[0];
  bool freed = false;
  inference::ModelInferRequest request;
  request.set_model_name(op.QualifiedName());
  auto selected = SelectOutputs(op, std::vector<std::string>{});
  ASSERT_TRUE(selected.ok()) << selected.status();
  grpc::ByteBuffer response;
  {
    OpCall call = test_support::CallWithOwnedResult(&freed);
    auto outputs = ResultOutputs(op, call, *selected);
    ASSERT_TRUE(outputs.ok()) << outputs.status();
    response = EncodeInferResponse(request, *outputs, call);
  }
  EXPECT_FALSE(freed);
  inference::ModelInferResponse parsed;
  grpc::ProtoBufferReader reader(&response);
  ASSERT_TRUE(parsed.ParseFromZeroCopyStream(&reader));
  ASSERT_EQ(parsed.raw_output_contents_size(), 1);
  float values[2];
  ASSERT_EQ(parsed.raw_output_contents(0).size(), sizeof(values));
  std::memcpy(values, parsed.raw_output_contents(0).data(), sizeof(values));
  EXPECT_EQ(values[0], 1.5f);
  EXPECT_EQ(values[1], -2.0f);
  response.Clear();
  EXPECT_TRUE(freed);
}

// The response is written by hand, without building the message: its bytes must be the
// ones protobuf writes for the same response (field order, packed shapes, empty strings
// left out), unary and on a stream, for tensors, BYTES and outputs in shared memory.
TEST(KServeCodec, ResponsesAreTheBytesProtobufWrites) {
  auto tensor = [](std::string name, const char* type, std::vector<int64_t> shape,
                   std::string bytes) {
    OutputTensor o;
    o.name = std::move(name);
    o.type = type == nullptr ? nullptr : FindDatatype(type);
    o.shape = std::move(shape);
    o.owned = std::move(bytes);  // sent as given (not a result tensor)
    return o;
  };
  std::vector<std::vector<OutputTensor>> cases;
  cases.push_back({tensor("0", "FP32", {2}, std::string(8, 'a'))});
  cases.push_back({tensor("out", "FP16", {}, std::string(2, 'b')),
                   tensor("x__1", nullptr, {1, 0, 300, int64_t{1} << 40}, ""),
                   tensor("", "INT64", {3}, std::string(24, '\0'))});
  OutputTensor shm = tensor("r", "FP64", {4}, "");
  shm.in_shared_memory = true;
  cases.push_back({shm, tensor("s", "BOOL", {1}, std::string(1, '\1'))});
  cases.push_back({});
  const OpCall call;
  for (const char* id : {"", "request-7"}) {
    for (const auto& outputs : cases) {
      for (bool stream : {false, true}) {
        SCOPED_TRACE(std::string("id '") + id + "', " + std::to_string(outputs.size()) +
                     " outputs" + (stream ? ", stream" : ""));
        inference::ModelInferRequest request;
        request.set_model_name("myops::scale_shift");
        request.set_id(id);
        inference::ModelInferResponse expected;
        expected.set_model_name(request.model_name());
        expected.set_model_version(kModelVersion);
        expected.set_id(id);
        if (stream) {
          (*expected.mutable_parameters())["triton_final_response"].set_bool_param(true);
        }
        for (const OutputTensor& o : outputs) {
          auto* out = expected.add_outputs();
          out->set_name(o.name);
          out->set_datatype(o.datatype());
          for (int64_t d : o.shape) out->add_shape(d);
          expected.add_raw_output_contents(o.owned);
        }
        std::string want = expected.SerializeAsString();
        grpc::ByteBuffer got = EncodeInferResponse(request, outputs, call);
        if (stream) {
          inference::ModelStreamInferResponse wrapped;
          *wrapped.mutable_infer_response() = expected;
          want = wrapped.SerializeAsString();
          got = EncodeStreamInferResponse(request, outputs, call);
        }
        std::string bytes;
        ASSERT_TRUE(wire::Flatten(got, &bytes));
        EXPECT_EQ(bytes, want);
      }
    }
  }
}

}  // namespace
}  // namespace myops::server::kserve
