// The Open Inference Protocol front end's model side (see frontends/oip/codec.h): metadata and
// configuration, and the response's encoding. The request's inputs are decoded in
// frontends/oip/inputs.cc; the rules shared with the REST binding are in frontends/oip/args.cc.
#include "frontends/oip/codec.h"

#include <grpc/slice.h>

#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "frontends/grpc/tensor_slice.h"
#include "frontends/oip/datatypes.h"
#include "myops/wire/call_wire.h"
#include "myops/wire/slice_reader.h"
#include "myops/wire/tensor_wire.h"

namespace myops::server::kserve {
using inference::ModelInferRequest;
using inference::ModelInferResponse;
using K = Value::Kind;

void DescribeModel(const OpInfo& op, inference::ModelMetadataResponse* out) {
  out->set_name(op.QualifiedName());
  out->add_versions(kModelVersion);
  out->set_platform("pytorch_libtorch");
  const ModelSpec spec = DescribeOp(op);
  auto add = [](const TensorSpec& from, inference::ModelMetadataResponse::TensorMetadata* t) {
    t->set_name(from.name);
    t->set_datatype(from.datatype);
    for (int64_t d : from.shape) t->add_shape(d);
  };
  for (const TensorSpec& in : spec.inputs) add(in, out->add_inputs());
  for (const TensorSpec& o : spec.outputs) add(o, out->add_outputs());
}

void DescribeModelConfig(const OpInfo& op, inference::ModelConfig* out) {
  out->set_name(op.QualifiedName());
  out->set_platform("pytorch_libtorch");
  out->set_backend("pytorch");
  out->set_max_batch_size(0);
  auto data_type = [](const std::string& datatype) {
    inference::DataType type = inference::TYPE_INVALID;
    inference::DataType_Parse(datatype == "BYTES" ? "TYPE_STRING" : "TYPE_" + datatype, &type);
    return type;
  };
  const ModelSpec spec = DescribeOp(op);
  for (const TensorSpec& in : spec.inputs) {
    auto* t = out->add_input();
    t->set_name(in.name);
    t->set_data_type(data_type(in.datatype));
    for (int64_t d : in.shape) t->add_dims(d);
    t->set_optional(in.optional);
  }
  for (const TensorSpec& o : spec.outputs) {
    auto* t = out->add_output();
    t->set_name(o.name);
    t->set_data_type(data_type(o.datatype));
    for (int64_t d : o.shape) t->add_dims(d);
  }
}

void DescribeModelStats(const OpInfo& op, const ModelStatsSnapshot& stats,
                        inference::ModelStatistics* out) {
  auto set = [](const ModelStatsSnapshot::Duration& d, inference::StatisticDuration* to) {
    to->set_count(d.count);
    to->set_ns(d.ns);
  };
  out->set_name(op.QualifiedName());
  out->set_version(kModelVersion);
  out->set_last_inference(stats.last_inference_ms);
  out->set_inference_count(stats.inference_count);
  out->set_execution_count(stats.execution_count);
  inference::InferStatistics* s = out->mutable_inference_stats();
  set(stats.success, s->mutable_success());
  set(stats.fail, s->mutable_fail());
  set(stats.queue, s->mutable_queue());
  set(stats.compute_input, s->mutable_compute_input());
  set(stats.compute_infer, s->mutable_compute_infer());
  set(stats.compute_output, s->mutable_compute_output());
  if (stats.execution_count > 0) {
    inference::InferBatchStatistics* batch = out->add_batch_stats();
    batch->set_batch_size(1);
    set(stats.compute_input, batch->mutable_compute_input());
    set(stats.compute_infer, batch->mutable_compute_infer());
    set(stats.compute_output, batch->mutable_compute_output());
  }
}

absl::Status DescribeStatsOf(const OpRegistry& registry, const ModelStats& stats,
                             const std::string& name, const std::string& version,
                             inference::ModelStatisticsResponse* out) {
  if (!name.empty()) {
    auto index = FindModel(registry, name, version);
    if (!index.ok()) return index.status();
    DescribeModelStats(registry.ops()[static_cast<size_t>(*index)], stats.Read(*index),
                       out->add_model_stats());
    return absl::OkStatus();
  }
  if (!version.empty() && version != kModelVersion) {
    return absl::NotFoundError(absl::StrCat("no model has version '", version, "' (models have \"",
                                            kModelVersion, "\" only)"));
  }
  for (size_t i = 0; i < registry.ops().size(); ++i) {
    if (!registry.ops()[i].served) continue;
    DescribeModelStats(registry.ops()[i], stats.Read(static_cast<int>(i)), out->add_model_stats());
  }
  return absl::OkStatus();
}

namespace {

// Triton's mark of a request's last response on a stream (its parameter
// "triton_final_response"): every stream response here is its request's only one, so
// final; a request's triton_enable_empty_final_response then asks for nothing more, as
// Triton answers it for models that are not decoupled.
void MarkFinal(ModelInferResponse* response) {
  (*response->mutable_parameters())["triton_final_response"].set_bool_param(true);
}

void AppendLengthDelimited(int field, absl::string_view bytes, std::string* out) {
  wire::AppendVarint(wire::detail::Key(field, wire::detail::kLengthDelimited), out);
  wire::AppendVarint(bytes.size(), out);
  out->append(bytes.data(), bytes.size());
}

// A proto3 string field: written unless empty.
void AppendString(int field, absl::string_view s, std::string* out) {
  if (!s.empty()) AppendLengthDelimited(field, s, out);
}

// One ModelInferResponse.InferOutputTensor without contents: name, datatype, packed shape.
std::string OutputHead(const OutputTensor& o) {
  using Output = ModelInferResponse::InferOutputTensor;
  std::string out;
  AppendString(Output::kNameFieldNumber, o.name, &out);
  AppendString(Output::kDatatypeFieldNumber, o.datatype(), &out);
  if (!o.shape.empty()) {
    std::string shape;
    for (int64_t d : o.shape) wire::AppendVarint(static_cast<uint64_t>(d), &shape);
    AppendLengthDelimited(Output::kShapeFieldNumber, shape, &out);
  }
  return out;
}

// The response's fields before its raw contents, written as protobuf writes them (in
// field order; the codec test holds them to protobuf's bytes), without building the
// message: its model, version, id, (on a stream, the final-response mark,) outputs.
wire::MessageWriter InferResponseWriter(const ModelInferRequest& request,
                                        const std::vector<OutputTensor>& outputs,
                                        const OpCall& call, bool stream) {
  std::string head;
  AppendString(ModelInferResponse::kModelNameFieldNumber, request.model_name(), &head);
  AppendString(ModelInferResponse::kModelVersionFieldNumber, kModelVersion, &head);
  AppendString(ModelInferResponse::kIdFieldNumber, request.id(), &head);
  if (stream) {
    ModelInferResponse final_mark;  // its one field: parameters
    MarkFinal(&final_mark);
    head += final_mark.SerializeAsString();
  }
  std::vector<grpc::Slice> contents;
  contents.reserve(outputs.size());
  for (const OutputTensor& o : outputs) {
    AppendLengthDelimited(ModelInferResponse::kOutputsFieldNumber, OutputHead(o), &head);
    if (o.in_shared_memory) {
      contents.emplace_back();  // keeps raw_output_contents indexed like outputs
    } else if (o.is_tensor) {
      const Value& result = call.results[o.result];
      contents.push_back(TensorSlice(
          o.element < 0 ? result.tensor : result.tensor_list[static_cast<size_t>(o.element)]));
    } else {
      contents.push_back(grpc::Slice(o.owned));
    }
  }
  wire::MessageWriter writer;
  writer.AppendBytes(head);
  for (const grpc::Slice& s : contents) {
    writer.AppendData(ModelInferResponse::kRawOutputContentsFieldNumber, s);
  }
  return writer;
}

}  // namespace

grpc::ByteBuffer EncodeInferResponse(const ModelInferRequest& request,
                                     const std::vector<OutputTensor>& outputs, const OpCall& call) {
  return InferResponseWriter(request, outputs, call, /*stream=*/false).Finish();
}

grpc::ByteBuffer EncodeStreamInferResponse(const ModelInferRequest& request,
                                           const std::vector<OutputTensor>& outputs,
                                           const OpCall& call) {
  wire::MessageWriter out;
  out.AppendMessage(inference::ModelStreamInferResponse::kInferResponseFieldNumber,
                    InferResponseWriter(request, outputs, call, /*stream=*/true));
  return out.Finish();
}

grpc::ByteBuffer EncodeStreamInferError(const ModelInferRequest& request,
                                        const absl::Status& status) {
  inference::ModelStreamInferResponse response;
  response.set_error_message(status.ToString());
  response.mutable_infer_response()->set_model_name(request.model_name());
  response.mutable_infer_response()->set_model_version(kModelVersion);
  response.mutable_infer_response()->set_id(request.id());
  MarkFinal(response.mutable_infer_response());
  const std::string bytes = response.SerializeAsString();
  grpc::Slice slice(bytes);
  return grpc::ByteBuffer(&slice, 1);
}

}  // namespace myops::server::kserve
