// The Open Inference Protocol's binding-independent rules (see frontends/oip/args.h).
#include "frontends/oip/args.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace myops::server::kserve {
namespace {

using K = Value::Kind;

const ArgInfo* FindArg(const OpInfo& op, const std::string& name) {
  for (const ArgInfo& a : op.args) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

// The Tensor[] argument of `op` that input `name` is an element of ("<arg>__<i>"), with
// the element's index in `index` (when not null); nullptr when none.
const ArgInfo* ListOf(const OpInfo& op, const std::string& name, int* index) {
  const std::optional<ElementRef> element = SplitElementName(name);
  if (!element) return nullptr;
  const ArgInfo* arg = FindArg(op, element->name);
  if (arg == nullptr || arg->kind != ArgKind::kTensorList) return nullptr;
  if (index != nullptr) *index = element->index;
  return arg;
}

// Element `k` of `e` (an integer or bool datatype) as int64.
int64_t IntAt(const InputTensor& e, int64_t k) {
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
double FloatAt(const InputTensor& e, int64_t k) {
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

// INVALID_ARGUMENT naming field() unless input `e` has the shape argument `arg` takes:
// one element for a scalar, at most one dimension for a list. `field` is called only for
// the message.
template <typename Field>
absl::Status CheckShape(const ArgInfo& arg, const InputTensor& e, const Field& field) {
  const bool scalar_kind = arg.kind == ArgKind::kInt || arg.kind == ArgKind::kFloat ||
                           arg.kind == ArgKind::kBool || arg.kind == ArgKind::kScalar;
  if (scalar_kind && e.count != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(field(), " has ", e.count, " elements (shape ", ShapeString(e.shape),
                     "); argument '", arg.name, "' (", arg.type, ") takes one (shape [] or [1])"));
  }
  const bool is_list = arg.kind == ArgKind::kIntList || arg.kind == ArgKind::kFloatList;
  if (is_list && e.shape.size() > 1) {
    return absl::InvalidArgumentError(absl::StrCat(field(), " has shape ", ShapeString(e.shape),
                                                   "; argument '", arg.name, "' (", arg.type,
                                                   ") takes a 1-D tensor"));
  }
  return absl::OkStatus();
}

// Input `e` (of a datatype with a tensor dtype) as a tensor value: a view of its data, or
// of a narrowed copy in `scratch` (INT8, INT16, UINT8 in 32-bit typed contents).
Value TensorValue(const InputTensor& e, Scratch* scratch) {
  const Datatype& t = *e.type;
  Value v;
  v.kind = K::kTensor;
  v.tensor.dtype = *t.tensor;
  v.tensor.shape = e.shape;
  v.tensor.data = e.data;
  v.tensor.bytes = e.count * t.size;
  if (e.stride != t.size) {
    auto& buffer = scratch->emplace_back(new char[static_cast<size_t>(v.tensor.bytes)]);
    for (int64_t k = 0; k < e.count; ++k) {
      const int64_t value = IntAt(e, k);
      std::memcpy(buffer.get() + k * t.size, &value, static_cast<size_t>(t.size));  // LE
    }
    v.tensor.data = buffer.get();
  }
  return v;
}

// Input `e` of `op` as the value of argument `arg`.
absl::StatusOr<Value> ToValue(const OpInfo& op, const ArgInfo& arg, const InputTensor& e,
                              Scratch* scratch) {
  Value v;
  const Datatype& t = *e.type;
  // Made only for an error.
  auto field = [&] { return InputField(e.name, op.QualifiedName()); };
  auto wrong = [&](const std::string& accepted) {
    return absl::InvalidArgumentError(absl::StrCat(
        field(), " is ", t.name, "; argument '", arg.name, "' (", arg.type, ") takes ", accepted));
  };
  if (absl::Status shaped = CheckShape(arg, e, field); !shaped.ok()) return shaped;
  switch (arg.kind) {
    case ArgKind::kTensor:
      if (!t.tensor) return wrong(absl::StrCat("a tensor of ", DatatypeNames(true)));
      return TensorValue(e, scratch);
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
          absl::StrCat(field(), ": argument '", arg.name, "' (", arg.type,
                       ") is not an input tensor; send it as a request parameter (string_param)"));
    case ArgKind::kTensorList:
      return absl::InvalidArgumentError(
          absl::StrCat(field(), ": argument '", arg.name, "' (", arg.type,
                       ") is sent as one input per element, ", ElementName(arg.name, 0), ", ",
                       ElementName(arg.name, 1), ", ..."));
    case ArgKind::kOther:
      break;
  }
  return absl::InvalidArgumentError(absl::StrCat(field(), ": argument '", arg.name, "' (", arg.type,
                                                 ") cannot be sent over this protocol yet"));
}

// Parameter `p` as the value of argument `arg`.
absl::StatusOr<Value> ParameterValue(const ArgInfo& arg, const Parameter& p, const OpInfo& op) {
  Value v;
  auto model = [&op] { return op.QualifiedName(); };  // made only for an error
  using P = Parameter::Kind;
  if (arg.kind == ArgKind::kTensor || arg.kind == ArgKind::kTensorList) {
    return absl::InvalidArgumentError(absl::StrCat(
        "parameter '", arg.name, "' of model ", model(), " is a tensor argument (", arg.type,
        "); send it as ",
        arg.kind == ArgKind::kTensor ? "an input"
                                     : absl::StrCat("inputs ", ElementName(arg.name, 0), ", ",
                                                    ElementName(arg.name, 1), ", ...")));
  }
  switch (p.kind) {
    case P::kBool:
      v.kind = K::kBool, v.bool_value = p.bool_value;
      break;
    case P::kInt64:
      v.kind = K::kInt, v.int_value = p.int64_value;
      break;
    case P::kUint64:
      if (p.uint64_value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return absl::InvalidArgumentError(absl::StrCat("parameter '", arg.name, "' of model ",
                                                       model(), " is ", p.uint64_value,
                                                       ", more than an int64 holds"));
      }
      v.kind = K::kInt, v.int_value = static_cast<int64_t>(p.uint64_value);
      break;
    case P::kDouble:
      v.kind = K::kFloat, v.float_value = p.double_value;
      break;
    case P::kString:
      if (arg.kind == ArgKind::kScalarType) {
        const std::string& name = p.string_value;
        std::optional<DType> dtype = DTypeFromName(name);
        if (const Datatype* d = FindDatatype(name); d != nullptr && !dtype) dtype = d->tensor;
        if (!dtype) {
          return absl::InvalidArgumentError(
              absl::StrCat("parameter '", arg.name, "' of model ", model(), " is '", name,
                           "'; expected a dtype name (", DTypeNameList(), ") or datatype (",
                           DatatypeNames(true), ")"));
        }
        v.kind = K::kScalarType, v.scalar_type = *dtype;
      } else {
        v.kind = K::kString, v.string_value = p.string_value;
      }
      break;
    case P::kOther:
      return absl::InvalidArgumentError(absl::StrCat(
          "parameter '", arg.name, "' of model ", model(), " is ", p.other, "; argument '",
          arg.name, "' (", arg.type, ") takes a bool, a number or a string"));
    case P::kNone:
      v.kind = K::kNone;
      break;
  }
  return v;
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

absl::StatusOr<std::vector<NamedValue>> RequestArguments(const OpInfo& op,
                                                         const std::vector<InputTensor>& inputs,
                                                         const std::vector<Parameter>& parameters,
                                                         Scratch* scratch) {
  std::vector<NamedValue> out;
  out.reserve(inputs.size() + parameters.size());
  for (const InputTensor& in : inputs) {
    auto value = InputArgument(op, in, scratch);
    if (!value.ok()) return value.status();
    out.push_back(std::move(*value));
  }
  if (absl::Status grouped = GroupTensorLists(op, &out); !grouped.ok()) return grouped;
  for (const Parameter& p : parameters) {
    auto value = ParameterArgument(op, p);
    if (!value.ok()) return value.status();
    if (*value) out.push_back(std::move(**value));
  }
  return out;
}

ModelSpec DescribeOp(const OpInfo& op) {
  // The datatype and shape an input or output of this kind is described with; false: none.
  auto describe = [](const ArgInfo& a, TensorSpec* t) {
    if (a.signature.has_value()) {  // a program's tensor: its dtype, -1 for dynamic sizes
      t->datatype = DatatypeOf(a.signature->dtype)->name, t->tensor = true;
      t->shape.clear();
      for (const TensorSignature::Dim& d : a.signature->dims) {
        t->shape.push_back(d.is_static() ? d.min : -1);
      }
      return true;
    }
    switch (a.kind) {
      case ArgKind::kTensor:
      case ArgKind::kTensorList:  // each element (arguments) or the list (returns)
        t->datatype = "FP32", t->shape = {-1}, t->tensor = true;
        return true;
      case ArgKind::kInt:
        t->datatype = "INT64", t->shape = {1};
        return true;
      case ArgKind::kFloat:
      case ArgKind::kScalar:
        t->datatype = "FP64", t->shape = {1};
        return true;
      case ArgKind::kBool:
        t->datatype = "BOOL", t->shape = {1};
        return true;
      case ArgKind::kIntList:
        t->datatype = "INT64", t->shape = {-1};
        return true;
      case ArgKind::kFloatList:
        t->datatype = "FP64", t->shape = {-1};
        return true;
      case ArgKind::kString:
        t->datatype = "BYTES", t->shape = {1};
        return true;
      default:
        return false;
    }
  };
  ModelSpec spec;
  for (const ArgInfo& a : op.args) {
    TensorSpec t;
    t.name = a.kind == ArgKind::kTensorList ? ElementName(a.name, 0) : a.name;
    t.optional = a.has_default || a.optional;
    if (a.kind == ArgKind::kString || !describe(a, &t)) continue;  // parameters only
    spec.inputs.push_back(std::move(t));
  }
  const std::vector<std::string> names = OutputNames(op);
  for (size_t i = 0; i < op.returns.size(); ++i) {
    TensorSpec t;
    t.name = names[i];
    describe(op.returns[i], &t);
    spec.outputs.push_back(std::move(t));
  }
  return spec;
}

std::vector<std::string> OutputNames(const OpInfo& op) {
  std::vector<std::string> names;
  for (size_t i = 0; i < op.returns.size(); ++i) {
    names.push_back(op.returns[i].name.empty() ? absl::StrCat("output__", i) : op.returns[i].name);
  }
  return names;
}

std::string InputField(const std::string& input, const std::string& model) {
  return absl::StrCat("input '", input, "' of model ", model);
}

std::string ShapeString(absl::Span<const int64_t> shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

absl::StatusOr<const Datatype*> ParseDatatype(const std::string& name, const std::string& field) {
  const Datatype* type = FindDatatype(name);
  if (type == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " has datatype '", name, "'; expected one of ", DatatypeNames(false)));
  }
  return type;
}

absl::StatusOr<int64_t> Elements(absl::Span<const int64_t> shape, int64_t item_size,
                                 const std::string& field, const TensorLimits& limits) {
  if (shape.size() > static_cast<size_t>(limits.max_dims)) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, " has ", shape.size(), " dimensions; at most ", limits.max_dims, " are supported"));
  }
  int64_t extent = 1;
  bool empty = false;
  for (size_t i = 0; i < shape.size(); ++i) {
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

absl::Status CheckRawSize(const InputTensor& in, uint64_t size, const std::string& field,
                          const char* what) {
  if (size != static_cast<uint64_t>(in.count * in.type->size)) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " has ", size, " bytes of ", what, " but shape ", ShapeString(in.shape),
                     " of ", in.type->name, " needs exactly ", in.count * in.type->size, " (",
                     in.count, " x ", in.type->size, ")"));
  }
  return absl::OkStatus();
}

absl::Status CheckRawData(const InputTensor& in, absl::string_view bytes, const std::string& field,
                          const char* what) {
  if (absl::Status s = CheckRawSize(in, bytes.size(), field, what); !s.ok()) return s;
  if (in.type->family == Family::kBool &&
      bytes.find_first_not_of(absl::string_view("\0\1", 2)) != absl::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " is BOOL with a byte other than 0 or 1 in its ", what));
  }
  return absl::OkStatus();
}

absl::StatusOr<NamedValue> InputArgument(const OpInfo& op, const InputTensor& in,
                                         Scratch* scratch) {
  NamedValue v;
  v.name = in.name;
  const ArgInfo* arg = FindArg(op, in.name);
  ArgInfo element;  // an element of a Tensor[] argument: "<arg>__<i>"
  if (arg == nullptr) {
    const ArgInfo* list = ListOf(op, in.name, nullptr);
    if (list == nullptr) return v;  // kNone: BindArguments names the unknown argument
    element = *list;
    element.kind = ArgKind::kTensor;
    element.type = absl::StrCat("an element of ", list->type);
    arg = &element;
  }
  auto value = ToValue(op, *arg, in, scratch);
  if (!value.ok()) return value.status();
  v.value = std::move(*value);
  return v;
}

absl::Status GroupTensorLists(const OpInfo& op, std::vector<NamedValue>* args) {
  const auto is_list = [](const ArgInfo& a) { return a.kind == ArgKind::kTensorList; };
  if (std::none_of(op.args.begin(), op.args.end(), is_list)) return absl::OkStatus();
  // The elements of each Tensor[] argument as received: (index, tensor), in request order.
  std::vector<std::pair<const ArgInfo*, std::vector<std::pair<int, TensorView>>>> lists;
  std::vector<NamedValue> rest;
  for (NamedValue& v : *args) {
    int index = 0;
    const ArgInfo* list = v.value.kind == K::kTensor && FindArg(op, v.name) == nullptr
                              ? ListOf(op, v.name, &index)
                              : nullptr;
    if (list == nullptr) {
      rest.push_back(std::move(v));
      continue;
    }
    auto same = [list](const auto& l) { return l.first == list; };
    auto found = std::find_if(lists.begin(), lists.end(), same);
    if (found == lists.end()) found = lists.insert(lists.end(), {list, {}});
    found->second.emplace_back(index, std::move(v.value.tensor));
  }
  for (auto& [arg, elements] : lists) {
    std::sort(elements.begin(), elements.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    NamedValue& v = rest.emplace_back();
    v.name = arg->name;
    v.value.kind = K::kTensorList;
    for (size_t k = 0; k < elements.size(); ++k) {
      if (elements[k].first != static_cast<int>(k)) {
        std::vector<std::string> got;
        for (const auto& e : elements) got.push_back(ElementName(arg->name, e.first));
        return absl::InvalidArgumentError(absl::StrCat(
            "the inputs of argument '", arg->name, "' (", arg->type, ") of model ",
            op.QualifiedName(), " are ", absl::StrJoin(got, ", "), "; they must be numbered from ",
            ElementName(arg->name, 0), " on, without gaps or repeats"));
      }
      v.value.tensor_list.push_back(std::move(elements[k].second));
    }
  }
  *args = std::move(rest);
  return absl::OkStatus();
}

absl::StatusOr<std::optional<NamedValue>> ParameterArgument(const OpInfo& op, const Parameter& p) {
  const ArgInfo* arg = FindArg(op, p.name);
  if (arg == nullptr) return std::nullopt;  // not ours: clients add their own parameters
  auto value = ParameterValue(*arg, p, op);
  if (!value.ok()) return value.status();
  return NamedValue{p.name, std::move(*value)};
}

absl::StatusOr<std::optional<int64_t>> TimeoutParameter(const OpInfo& op, const Parameter& p) {
  if (p.name != "timeout" || FindArg(op, p.name) != nullptr) return std::nullopt;
  using P = Parameter::Kind;
  if (p.kind == P::kInt64 && p.int64_value >= 0) return p.int64_value;
  if (p.kind == P::kUint64) {
    return static_cast<int64_t>(
        std::min<uint64_t>(p.uint64_value, std::numeric_limits<int64_t>::max()));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("parameter 'timeout' of model ", op.QualifiedName(),
                   " is the request's timeout in microseconds; expected an integer >= 0"));
}

}  // namespace myops::server::kserve
