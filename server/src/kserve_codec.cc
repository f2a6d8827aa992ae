// The Open Inference Protocol front end's protobuf side (see kserve_codec.h).
#include "kserve_codec.h"

#include <grpc/slice.h>
#include <grpcpp/support/proto_buffer_reader.h>

#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "myops/wire/call_wire.h"

namespace myops::server::kserve {
namespace {

using inference::ModelInferRequest;
using inference::ModelInferResponse;
using K = Value::Kind;

enum class Family { kBool, kSigned, kUnsigned, kFloat, kHalf };

// One datatype of the protocol: its element size, what it is, and the pipeline's tensor
// dtype when the pipeline carries it as a tensor.
struct Datatype {
  const char* name;
  int64_t size;
  Family family;
  std::optional<DType> tensor;
};

const Datatype kDatatypes[] = {
    {"BOOL", 1, Family::kBool, DType::kBool},     {"UINT8", 1, Family::kUnsigned, DType::kUInt8},
    {"INT8", 1, Family::kSigned, DType::kInt8},   {"INT16", 2, Family::kSigned, DType::kInt16},
    {"INT32", 4, Family::kSigned, DType::kInt32}, {"INT64", 8, Family::kSigned, DType::kInt64},
    {"FP16", 2, Family::kHalf, DType::kFloat16},  {"FP32", 4, Family::kFloat, DType::kFloat32},
    {"FP64", 8, Family::kFloat, DType::kFloat64}, {"BF16", 2, Family::kHalf, DType::kBFloat16},
};

const Datatype* FindDatatype(const std::string& name) {
  for (const Datatype& d : kDatatypes) {
    if (name == d.name) return &d;
  }
  return nullptr;
}

const Datatype* DatatypeOf(DType dtype) {
  for (const Datatype& d : kDatatypes) {
    if (d.tensor == dtype) return &d;
  }
  return nullptr;
}

std::string DatatypeNames(bool tensors_only) {
  std::vector<std::string> names;
  for (const Datatype& d : kDatatypes) {
    if (!tensors_only || d.tensor) names.push_back(d.name);
  }
  return absl::StrJoin(names, ", ");
}

std::string ShapeString(const google::protobuf::RepeatedField<int64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

const ArgInfo* FindArg(const OpInfo& op, const std::string& name) {
  for (const ArgInfo& a : op.args) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

// The element count of `shape`, checked against `limits`; INVALID_ARGUMENT naming `field`.
absl::StatusOr<int64_t> Elements(const google::protobuf::RepeatedField<int64_t>& shape,
                                 int64_t item_size, const std::string& field,
                                 const TensorLimits& limits) {
  if (shape.size() > limits.max_dims) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, " has ", shape.size(), " dimensions; at most ", limits.max_dims, " are supported"));
  }
  int64_t extent = 1;
  bool empty = false;
  for (int i = 0; i < shape.size(); ++i) {
    const int64_t d = shape[i];
    if (d < 0) {
      return absl::InvalidArgumentError(absl::StrCat(field, ": shape[", i, "] is ", d,
                                                     "; sizes must be >= 0 (shape ",
                                                     ShapeString(shape), ")"));
    }
    if (d == 0) {
      empty = true;
    } else if (__builtin_mul_overflow(extent, d, &extent)) {
      return absl::InvalidArgumentError(absl::StrCat(field, ": shape ", ShapeString(shape),
                                                     " has more elements than fit in int64"));
    }
  }
  const int64_t numel = empty ? 0 : extent;
  int64_t bytes = 0;
  if (numel > limits.max_elements || __builtin_mul_overflow(numel, item_size, &bytes) ||
      bytes > limits.max_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " has ", numel, " elements (shape ", ShapeString(shape),
                     "); this server's limits are ", limits.max_elements, " elements and ",
                     limits.max_bytes, " bytes"));
  }
  return numel;
}

// One input's elements: where they are and how many.
struct Elems {
  const Datatype* type = nullptr;
  const void* data = nullptr;  // `count` elements of type->size bytes (typed: see `stride`)
  int64_t count = 0;
  int64_t stride = 0;  // bytes per element in `data`: type->size raw, the field's typed
};

// The data of input `i` (raw or typed contents), checked against its shape.
absl::StatusOr<Elems> InputData(const ModelInferRequest& request, int i, const std::string& field,
                                const TensorLimits& limits) {
  const ModelInferRequest::InferInputTensor& in = request.inputs(i);
  Elems e;
  e.type = FindDatatype(in.datatype());
  if (e.type == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(field, " has datatype '", in.datatype(),
                                                   "'; expected one of ", DatatypeNames(false)));
  }
  auto numel = Elements(in.shape(), e.type->size, field, limits);
  if (!numel.ok()) return numel.status();
  e.count = *numel;
  if (request.raw_input_contents_size() > 0) {
    if (in.has_contents()) {
      return absl::InvalidArgumentError(absl::StrCat(
          field,
          " has typed contents in a request with raw_input_contents (use one or the other)"));
    }
    if (request.raw_input_contents_size() != request.inputs_size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the request has ", request.raw_input_contents_size(), " raw_input_contents for ",
          request.inputs_size(), " inputs (one per input, in the order of inputs)"));
    }
    const std::string& raw = request.raw_input_contents(i);
    if (static_cast<int64_t>(raw.size()) != e.count * e.type->size) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, " has ", raw.size(), " bytes of raw contents but shape ",
                       ShapeString(in.shape()), " of ", e.type->name, " needs exactly ",
                       e.count * e.type->size, " (", e.count, " x ", e.type->size, ")"));
    }
    // A C++ bool holds 0 or 1; any other byte makes reading it undefined behaviour.
    if (e.type->family == Family::kBool &&
        raw.find_first_not_of(std::string_view("\0\1", 2)) != std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, " is BOOL with a byte other than 0 or 1 in its raw contents"));
    }
    e.data = raw.data();
    e.stride = e.type->size;
    return e;
  }
  const inference::InferTensorContents& c = in.contents();
  int64_t have = 0;
  const char* where = "";
  switch (e.type->family) {
    case Family::kBool:
      have = c.bool_contents_size(), e.data = c.bool_contents().data(), e.stride = 1;
      where = "bool_contents";
      break;
    case Family::kSigned:
      if (e.type->size == 8) {
        have = c.int64_contents_size(), e.data = c.int64_contents().data(), e.stride = 8;
        where = "int64_contents";
      } else {
        have = c.int_contents_size(), e.data = c.int_contents().data(), e.stride = 4;
        where = "int_contents";
      }
      break;
    case Family::kUnsigned:
      have = c.uint_contents_size(), e.data = c.uint_contents().data(), e.stride = 4;
      where = "uint_contents";
      break;
    case Family::kFloat:
      if (e.type->size == 4) {
        have = c.fp32_contents_size(), e.data = c.fp32_contents().data(), e.stride = 4;
        where = "fp32_contents";
      } else {
        have = c.fp64_contents_size(), e.data = c.fp64_contents().data(), e.stride = 8;
        where = "fp64_contents";
      }
      break;
    case Family::kHalf:
      return absl::InvalidArgumentError(
          absl::StrCat(field, " is ", e.type->name, ", which travels only as raw_input_contents"));
  }
  if (have != e.count) {
    return absl::InvalidArgumentError(absl::StrCat(field, " has ", have, " elements in ", where,
                                                   " but shape ", ShapeString(in.shape()),
                                                   " needs ", e.count));
  }
  return e;
}

// Element `k` of `e` (an integer or bool datatype) as int64.
int64_t IntAt(const Elems& e, int64_t k) {
  const char* p = static_cast<const char*>(e.data) + k * e.stride;
  if (e.stride != e.type->size) {  // typed contents: int32 / uint32 carriers
    if (e.type->family == Family::kUnsigned) {
      uint32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    int32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
  switch (e.type->size) {
    case 1:
      return e.type->family == Family::kSigned ? static_cast<int8_t>(*p) : static_cast<uint8_t>(*p);
    case 2: {
      int16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    case 4: {
      int32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    default: {
      int64_t v;
      std::memcpy(&v, p, 8);
      return v;
    }
  }
}

// Element `k` of `e` (FP32 or FP64) as double.
double FloatAt(const Elems& e, int64_t k) {
  const char* p = static_cast<const char*>(e.data) + k * e.stride;
  if (e.type->size == 4) {
    float v;
    std::memcpy(&v, p, 4);
    return v;
  }
  double v;
  std::memcpy(&v, p, 8);
  return v;
}

bool IsInteger(const Datatype& t) {
  return t.family == Family::kSigned || t.family == Family::kUnsigned;
}

// Input `e` as the value of argument `arg` (tensors that need narrowing are copied into
// `scratch`); INVALID_ARGUMENT naming `field` when its
// datatype or element count does not fit the argument.
absl::StatusOr<Value> ToValue(const ArgInfo& arg, const Elems& e,
                              const google::protobuf::RepeatedField<int64_t>& shape,
                              const std::string& field, Scratch* scratch) {
  Value v;
  const Datatype& t = *e.type;
  auto wrong = [&](const std::string& accepted) {
    return absl::InvalidArgumentError(absl::StrCat(field, " is ", t.name, "; argument '", arg.name,
                                                   "' (", arg.type, ") takes ", accepted));
  };
  const bool scalar_kind = arg.kind == ArgKind::kInt || arg.kind == ArgKind::kFloat ||
                           arg.kind == ArgKind::kBool || arg.kind == ArgKind::kScalar;
  if (scalar_kind && e.count != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " has ", e.count, " elements (shape ", ShapeString(shape),
                     "); argument '", arg.name, "' (", arg.type, ") takes one (shape [] or [1])"));
  }
  const bool is_list = arg.kind == ArgKind::kIntList || arg.kind == ArgKind::kFloatList;
  if (is_list && shape.size() > 1) {
    return absl::InvalidArgumentError(absl::StrCat(field, " has shape ", ShapeString(shape),
                                                   "; argument '", arg.name, "' (", arg.type,
                                                   ") takes a 1-D tensor"));
  }
  switch (arg.kind) {
    case ArgKind::kTensor: {
      if (!t.tensor) return wrong(absl::StrCat("a tensor of ", DatatypeNames(true)));
      v.kind = K::kTensor;
      v.tensor.dtype = *t.tensor;
      v.tensor.shape.assign(shape.begin(), shape.end());
      v.tensor.data = e.data;
      v.tensor.bytes = e.count * t.size;
      if (e.stride != t.size) {  // INT8, INT16, UINT8 in 32-bit typed contents: narrowed
        auto& buffer = scratch->emplace_back(new char[static_cast<size_t>(v.tensor.bytes)]);
        for (int64_t k = 0; k < e.count; ++k) {
          const int64_t value = IntAt(e, k);
          std::memcpy(buffer.get() + k * t.size, &value, static_cast<size_t>(t.size));  // LE
        }
        v.tensor.data = buffer.get();
      }
      return v;
    }
    case ArgKind::kInt:
      if (!IsInteger(t)) return wrong("an integer (INT8, INT16, INT32, INT64, UINT8)");
      v.kind = K::kInt, v.int_value = IntAt(e, 0);
      return v;
    case ArgKind::kBool:
      if (t.family != Family::kBool) return wrong("BOOL");
      v.kind = K::kBool, v.bool_value = IntAt(e, 0) != 0;
      return v;
    case ArgKind::kFloat:
    case ArgKind::kScalar:
      if (t.family == Family::kFloat) {
        v.kind = K::kFloat, v.float_value = FloatAt(e, 0);
      } else if (IsInteger(t)) {
        v.kind = K::kInt, v.int_value = IntAt(e, 0);
      } else if (t.family == Family::kBool && arg.kind == ArgKind::kScalar) {
        v.kind = K::kBool, v.bool_value = IntAt(e, 0) != 0;
      } else {
        return wrong(arg.kind == ArgKind::kScalar ? "BOOL, an integer, FP32 or FP64"
                                                  : "FP32, FP64 or an integer");
      }
      return v;
    case ArgKind::kIntList:
      if (!IsInteger(t)) return wrong("integers (INT8, INT16, INT32, INT64, UINT8)");
      v.kind = K::kIntList;
      for (int64_t k = 0; k < e.count; ++k) v.int_list.push_back(IntAt(e, k));
      return v;
    case ArgKind::kFloatList:
      if (t.family == Family::kFloat) {
        v.kind = K::kFloatList;
        for (int64_t k = 0; k < e.count; ++k) v.float_list.push_back(FloatAt(e, k));
      } else if (IsInteger(t)) {
        v.kind = K::kIntList;
        for (int64_t k = 0; k < e.count; ++k) v.int_list.push_back(IntAt(e, k));
      } else {
        return wrong("FP32, FP64 or integers");
      }
      return v;
    case ArgKind::kString:
    case ArgKind::kScalarType:
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": argument '", arg.name, "' (", arg.type,
                       ") is not an input tensor; send it as a request parameter (string_param)"));
    case ArgKind::kTensorList:
    case ArgKind::kOther:
      break;
  }
  return absl::InvalidArgumentError(absl::StrCat(field, ": argument '", arg.name, "' (", arg.type,
                                                 ") cannot be sent over this protocol yet"));
}

// Parameter `p` as the value of argument `arg`.
absl::StatusOr<Value> ParameterValue(const ArgInfo& arg, const inference::InferParameter& p,
                                     const std::string& model) {
  Value v;
  using P = inference::InferParameter;
  if (arg.kind == ArgKind::kTensor || arg.kind == ArgKind::kTensorList) {
    return absl::InvalidArgumentError(absl::StrCat("parameter '", arg.name, "' of model ", model,
                                                   " is a tensor argument (", arg.type,
                                                   "); send it as an input"));
  }
  switch (p.parameter_choice_case()) {
    case P::kBoolParam:
      v.kind = K::kBool, v.bool_value = p.bool_param();
      break;
    case P::kInt64Param:
      v.kind = K::kInt, v.int_value = p.int64_param();
      break;
    case P::kUint64Param:
      if (p.uint64_param() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return absl::InvalidArgumentError(absl::StrCat("parameter '", arg.name, "' of model ",
                                                       model, " is ", p.uint64_param(),
                                                       ", more than an int64 holds"));
      }
      v.kind = K::kInt, v.int_value = static_cast<int64_t>(p.uint64_param());
      break;
    case P::kDoubleParam:
      v.kind = K::kFloat, v.float_value = p.double_param();
      break;
    case P::kStringParam:
      if (arg.kind == ArgKind::kScalarType) {
        const std::string& name = p.string_param();
        std::optional<DType> dtype = DTypeFromName(name);
        if (const Datatype* d = FindDatatype(name); d != nullptr && !dtype) dtype = d->tensor;
        if (!dtype) {
          return absl::InvalidArgumentError(
              absl::StrCat("parameter '", arg.name, "' of model ", model, " is '", name,
                           "'; expected a dtype name (", DTypeNameList(), ") or datatype (",
                           DatatypeNames(true), ")"));
        }
        v.kind = K::kScalarType, v.scalar_type = *dtype;
      } else {
        v.kind = K::kString, v.string_value = p.string_param();
      }
      break;
    case P::PARAMETER_CHOICE_NOT_SET:
      v.kind = K::kNone;
      break;
  }
  return v;
}

// The slice of a result tensor: its memory, held by a reference to its owner until gRPC
// frees the slice.
grpc::Slice TensorSlice(const TensorView& view, const std::shared_ptr<const void>& owner) {
  if (view.bytes == 0) return grpc::Slice();
  auto* holder = new std::shared_ptr<const void>(owner);
  return grpc::Slice(
      grpc_slice_new_with_user_data(
          const_cast<void*>(view.data), static_cast<size_t>(view.bytes),
          [](void* p) { delete static_cast<std::shared_ptr<const void>*>(p); }, holder),
      grpc::Slice::STEAL_REF);
}

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

absl::Status ParseInferRequest(const grpc::ByteBuffer& bytes, inference::ModelInferRequest* out) {
  grpc::ByteBuffer copy = bytes;  // shares the slices; the reader consumes its own
  grpc::ProtoBufferReader reader(&copy);
  if (!out->ParseFromZeroCopyStream(&reader)) {
    return absl::InvalidArgumentError(
        absl::StrCat("the ", bytes.Length(), " bytes are not a valid inference.ModelInferRequest"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<NamedValue>> DecodeInferInputs(const OpInfo& op,
                                                          const ModelInferRequest& request,
                                                          const TensorLimits& limits,
                                                          Scratch* scratch) {
  const std::string model = op.QualifiedName();
  std::vector<NamedValue> out;
  for (int i = 0; i < request.inputs_size(); ++i) {
    const ModelInferRequest::InferInputTensor& in = request.inputs(i);
    const std::string field = absl::StrCat("input '", in.name(), "' of model ", model);
    auto elems = InputData(request, i, field, limits);
    if (!elems.ok()) return elems.status();
    NamedValue& v = out.emplace_back();
    v.name = in.name();
    const ArgInfo* arg = FindArg(op, in.name());
    if (arg == nullptr) continue;  // kNone: BindArguments names the unknown argument
    auto value = ToValue(*arg, *elems, in.shape(), field, scratch);
    if (!value.ok()) return value.status();
    v.value = std::move(*value);
  }
  for (const auto& [name, parameter] : request.parameters()) {
    const ArgInfo* arg = FindArg(op, name);
    if (arg == nullptr) continue;  // not ours: clients add their own parameters
    auto value = ParameterValue(*arg, parameter, model);
    if (!value.ok()) return value.status();
    out.push_back({name, std::move(*value)});
  }
  return out;
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
