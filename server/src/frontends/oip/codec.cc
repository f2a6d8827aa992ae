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

wire::MessageWriter InferResponseWriter(const ModelInferRequest& request,
                                        const std::vector<OutputTensor>& outputs,
                                        const OpCall& call, bool stream) {
  ModelInferResponse head;
  head.set_model_name(request.model_name());
  head.set_model_version(kModelVersion);
  head.set_id(request.id());
  if (stream) MarkFinal(&head);
  std::vector<grpc::Slice> contents;
  for (const OutputTensor& o : outputs) {
    auto* out = head.add_outputs();
    out->set_name(o.name);
    out->set_datatype(o.datatype());
    for (int64_t d : o.shape) out->add_shape(d);
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
  writer.AppendBytes(head.SerializeAsString());
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
