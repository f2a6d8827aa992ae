// The Open Inference Protocol front end's request side: a ModelInferRequest's inputs and
// parameters to the pipeline's named arguments (see kserve_codec.h for the mapping).
#include <grpcpp/support/proto_buffer_reader.h>

#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kserve_codec.h"
#include "kserve_datatypes.h"

namespace myops::server::kserve {
namespace {

using inference::ModelInferRequest;
using K = Value::Kind;

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

}  // namespace

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

}  // namespace myops::server::kserve
