// The Open Inference Protocol front end's model side (see kserve_codec.h): names,
// metadata and configuration, output selection and the response's encoding. The
// request's inputs are decoded in kserve_inputs.cc.
#include "kserve_codec.h"

#include <grpc/slice.h>

#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "call_codec.h"
#include "kserve_datatypes.h"
#include "myops/wire/call_wire.h"

namespace myops::server::kserve {
namespace {

using inference::ModelInferRequest;
using inference::ModelInferResponse;
using K = Value::Kind;

template <typename T>
grpc::Slice CopySlice(const std::vector<T>& values) {
  return grpc::Slice(values.data(), values.size() * sizeof(T));
}

}  // namespace
absl::StatusOr<int> FindModel(const OpRegistry& registry, const std::string& name,
                              const std::string& version) {
  auto index = registry.Find(name);
  if (!index.ok()) {
    return absl::NotFoundError(absl::StrCat("unknown model '", name,
                                            "': models are the served operators, named "
                                            "namespace::name[.overload] (",
                                            index.status().message(), ")"));
  }
  if (!version.empty() && version != kModelVersion) {
    return absl::NotFoundError(absl::StrCat("model '", name, "' has no version '", version,
                                            "' (its only version is \"", kModelVersion, "\")"));
  }
  return index;
}

std::vector<std::string> OutputNames(const OpInfo& op) {
  std::vector<std::string> names;
  for (size_t i = 0; i < op.returns.size(); ++i) {
    names.push_back(op.returns[i].name.empty() ? absl::StrCat("output__", i) : op.returns[i].name);
  }
  return names;
}

void DescribeModel(const OpInfo& op, inference::ModelMetadataResponse* out) {
  out->set_name(op.QualifiedName());
  out->add_versions(kModelVersion);
  out->set_platform("pytorch_libtorch");
  // The datatype an input or output of this kind is described with; empty: none.
  auto describe = [](const ArgInfo& a, inference::ModelMetadataResponse::TensorMetadata* t) {
    switch (a.kind) {
      case ArgKind::kTensor:
        t->set_datatype("FP32"), t->add_shape(-1);
        return true;
      case ArgKind::kInt:
        t->set_datatype("INT64"), t->add_shape(1);
        return true;
      case ArgKind::kFloat:
      case ArgKind::kScalar:
        t->set_datatype("FP64"), t->add_shape(1);
        return true;
      case ArgKind::kBool:
        t->set_datatype("BOOL"), t->add_shape(1);
        return true;
      case ArgKind::kIntList:
        t->set_datatype("INT64"), t->add_shape(-1);
        return true;
      case ArgKind::kFloatList:
        t->set_datatype("FP64"), t->add_shape(-1);
        return true;
      case ArgKind::kString:
        t->set_datatype("BYTES"), t->add_shape(1);
        return true;
      default:
        return false;
    }
  };
  for (const ArgInfo& a : op.args) {
    inference::ModelMetadataResponse::TensorMetadata t;
    t.set_name(a.name);
    if (a.kind == ArgKind::kString || !describe(a, &t)) continue;  // parameters only
    *out->add_inputs() = std::move(t);
  }
  const std::vector<std::string> names = OutputNames(op);
  for (size_t i = 0; i < op.returns.size(); ++i) {
    auto* t = out->add_outputs();
    t->set_name(names[i]);
    describe(op.returns[i], t);
  }
}

void DescribeModelConfig(const OpInfo& op, inference::ModelConfig* out) {
  inference::ModelMetadataResponse meta;
  DescribeModel(op, &meta);
  out->set_name(meta.name());
  out->set_platform(meta.platform());
  out->set_backend("pytorch");
  out->set_max_batch_size(0);
  auto data_type = [](const std::string& datatype) {
    inference::DataType type = inference::TYPE_INVALID;
    inference::DataType_Parse(datatype == "BYTES" ? "TYPE_STRING" : "TYPE_" + datatype, &type);
    return type;
  };
  for (const auto& in : meta.inputs()) {
    auto* t = out->add_input();
    t->set_name(in.name());
    t->set_data_type(data_type(in.datatype()));
    t->mutable_dims()->CopyFrom(in.shape());
    for (const ArgInfo& a : op.args) {
      if (a.name == in.name()) t->set_optional(a.has_default || a.optional);
    }
  }
  for (const auto& o : meta.outputs()) {
    auto* t = out->add_output();
    t->set_name(o.name());
    t->set_data_type(data_type(o.datatype()));
    t->mutable_dims()->CopyFrom(o.shape());
  }
}

absl::StatusOr<std::vector<int>> SelectOutputs(const OpInfo& op, const ModelInferRequest& request) {
  const std::vector<std::string> names = OutputNames(op);
  std::vector<int> selected;
  if (request.outputs_size() == 0) {
    for (size_t i = 0; i < names.size(); ++i) selected.push_back(static_cast<int>(i));
  }
  for (const auto& wanted : request.outputs()) {
    int found = -1;
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] == wanted.name()) found = static_cast<int>(i);
    }
    if (found < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("model ", op.QualifiedName(), " has no output '", wanted.name(),
                       "' (outputs: ", absl::StrJoin(names, ", "), ")"));
    }
    for (int s : selected) {
      if (s == found) {
        return absl::InvalidArgumentError(
            absl::StrCat("output '", wanted.name(), "' is requested twice"));
      }
    }
    selected.push_back(found);
  }
  for (int r : selected) {
    const ArgKind kind = op.returns[static_cast<size_t>(r)].kind;
    if (kind == ArgKind::kTensorList || op.returns[static_cast<size_t>(r)].optional) {
      return absl::UnimplementedError(
          absl::StrCat("output '", names[static_cast<size_t>(r)], "' of model ", op.QualifiedName(),
                       " is ", op.returns[static_cast<size_t>(r)].type,
                       ", which this protocol front end does not carry yet (myops.v1 Call does)"));
    }
  }
  return selected;
}

namespace {

absl::StatusOr<wire::MessageWriter> InferResponseWriter(const OpInfo& op,
                                                        const ModelInferRequest& request,
                                                        const OpCall& call,
                                                        const std::vector<int>& selected) {
  const std::vector<std::string> names = OutputNames(op);
  // The owner (in call.keep_alive) of each result's tensor memory.
  std::vector<size_t> owner_of(call.results.size(), 0);
  size_t next_owner = 0;
  for (size_t r = 0; r < call.results.size(); ++r) {
    owner_of[r] = next_owner;
    if (call.results[r].kind == K::kTensor) next_owner += 1;
    next_owner += call.results[r].tensor_list.size();
  }
  ModelInferResponse head;
  head.set_model_name(request.model_name());
  head.set_model_version(kModelVersion);
  head.set_id(request.id());
  std::vector<grpc::Slice> contents;
  for (int r : selected) {
    if (r >= static_cast<int>(call.results.size())) {
      return absl::InternalError(absl::StrCat(op.QualifiedName(), " returned ", call.results.size(),
                                              " results, not ", names.size()));
    }
    const Value& v = call.results[static_cast<size_t>(r)];
    auto* out = head.add_outputs();
    out->set_name(names[static_cast<size_t>(r)]);
    switch (v.kind) {
      case K::kTensor: {
        const Datatype* type = DatatypeOf(v.tensor.dtype);
        if (type == nullptr) {
          return absl::UnimplementedError(
              absl::StrCat("output '", out->name(), "' has dtype ", DTypeName(v.tensor.dtype),
                           ", which this protocol front end does not carry yet"));
        }
        out->set_datatype(type->name);
        for (int64_t d : v.tensor.shape) out->add_shape(d);
        contents.push_back(TensorSlice(v.tensor, call.keep_alive.at(owner_of[r])));
        break;
      }
      case K::kInt:
        out->set_datatype("INT64"), out->add_shape(1);
        contents.push_back(CopySlice(std::vector<int64_t>{v.int_value}));
        break;
      case K::kFloat:
        out->set_datatype("FP64"), out->add_shape(1);
        contents.push_back(CopySlice(std::vector<double>{v.float_value}));
        break;
      case K::kBool:
        out->set_datatype("BOOL"), out->add_shape(1);
        contents.push_back(CopySlice(std::vector<uint8_t>{v.bool_value ? uint8_t{1} : uint8_t{0}}));
        break;
      case K::kIntList:
        out->set_datatype("INT64"), out->add_shape(static_cast<int64_t>(v.int_list.size()));
        contents.push_back(CopySlice(v.int_list));
        break;
      case K::kFloatList:
        out->set_datatype("FP64"), out->add_shape(static_cast<int64_t>(v.float_list.size()));
        contents.push_back(CopySlice(v.float_list));
        break;
      case K::kString: {
        out->set_datatype("BYTES"), out->add_shape(1);
        std::string bytes(4, '\0');
        const auto n = static_cast<uint32_t>(v.string_value.size());
        std::memcpy(bytes.data(), &n, 4);  // little-endian length, as Triton's BYTES
        bytes += v.string_value;
        contents.push_back(grpc::Slice(bytes));
        break;
      }
      default:
        return absl::UnimplementedError(absl::StrCat(
            "output '", out->name(), "' of model ", op.QualifiedName(),
            " is None or a tensor list, which this protocol front end does not carry yet"));
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

absl::StatusOr<grpc::ByteBuffer> EncodeInferResponse(const OpInfo& op,
                                                     const ModelInferRequest& request,
                                                     const OpCall& call,
                                                     const std::vector<int>& selected) {
  auto writer = InferResponseWriter(op, request, call, selected);
  if (!writer.ok()) return writer.status();
  return writer->Finish();
}

absl::StatusOr<grpc::ByteBuffer> EncodeStreamInferResponse(const OpInfo& op,
                                                           const ModelInferRequest& request,
                                                           const OpCall& call,
                                                           const std::vector<int>& selected) {
  auto writer = InferResponseWriter(op, request, call, selected);
  if (!writer.ok()) return writer.status();
  wire::MessageWriter out;
  out.AppendMessage(inference::ModelStreamInferResponse::kInferResponseFieldNumber,
                    std::move(*writer));
  return out.Finish();
}

grpc::ByteBuffer EncodeStreamInferError(const ModelInferRequest& request,
                                        const absl::Status& status) {
  inference::ModelStreamInferResponse response;
  response.set_error_message(status.ToString());
  response.mutable_infer_response()->set_model_name(request.model_name());
  response.mutable_infer_response()->set_model_version(kModelVersion);
  response.mutable_infer_response()->set_id(request.id());
  const std::string bytes = response.SerializeAsString();
  grpc::Slice slice(bytes);
  return grpc::ByteBuffer(&slice, 1);
}

}  // namespace myops::server::kserve
