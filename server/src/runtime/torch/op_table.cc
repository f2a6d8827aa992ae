// The torch half of the operator registry (see op_registry.h): reads PyTorch's operator
// table (c10::Dispatcher) and describes each matching schema without torch types; adds
// the exported programs (runtime/torch/program_package.h).
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/function_schema.h>

#include <algorithm>
#include <sstream>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "runtime/torch/op_handles.h"
#include "runtime/torch/program_package.h"

namespace myops::server {
namespace {

// The wire kind of a (non-optional) schema type.
ArgKind KindOf(const c10::TypePtr& type) {
  switch (type->kind()) {
    case c10::TypeKind::TensorType:
      return ArgKind::kTensor;
    case c10::TypeKind::IntType:
    case c10::TypeKind::SymIntType:
      return ArgKind::kInt;
    case c10::TypeKind::FloatType:
      return ArgKind::kFloat;
    case c10::TypeKind::BoolType:
      return ArgKind::kBool;
    case c10::TypeKind::StringType:
      return ArgKind::kString;
    case c10::TypeKind::NumberType:
      return ArgKind::kScalar;
    case c10::TypeKind::ScalarTypeType:
      return ArgKind::kScalarType;
    case c10::TypeKind::ListType: {
      const c10::TypePtr element = type->castRaw<c10::ListType>()->getElementType();
      switch (element->kind()) {
        case c10::TypeKind::IntType:
        case c10::TypeKind::SymIntType:
          return ArgKind::kIntList;
        case c10::TypeKind::FloatType:
          return ArgKind::kFloatList;
        case c10::TypeKind::TensorType:
          return ArgKind::kTensorList;
        default:
          return ArgKind::kOther;
      }
    }
    default:
      return ArgKind::kOther;
  }
}

ArgInfo Describe(const c10::Argument& a) {
  ArgInfo info;
  info.name = a.name();
  // The real type: the schema parser records SymInt and ScalarType as int in type().
  c10::TypePtr type = a.real_type();
  if (type->kind() == c10::TypeKind::OptionalType) {
    info.optional = true;
    type = type->castRaw<c10::OptionalType>()->getElementType();
  }
  info.kind = KindOf(type);
  info.type = a.real_type()->str();
  if (a.N().has_value()) {
    info.type = absl::StrReplaceAll(info.type, {{"[]", absl::StrCat("[", *a.N(), "]")}});
  }
  if (a.default_value().has_value()) {
    info.has_default = true;
    std::ostringstream text;
    text << *a.default_value();
    info.default_text = text.str();
  }
  info.kwarg_only = a.kwarg_only();
  return info;
}

// Why an op cannot be served, or "" when it can.
std::string NotServedReason(const c10::FunctionSchema& schema, const OpInfo& info) {
  for (const c10::Argument& a : schema.arguments()) {
    if (a.alias_info() != nullptr) {
      return a.alias_info()->isWrite()
                 ? absl::StrCat("it writes into its argument '", a.name(),
                                "' (mutable operators are not served; call a functional "
                                "variant)")
                 : absl::StrCat("its result aliases its argument '", a.name(),
                                "' (views of request memory are not served)");
    }
  }
  for (const ArgInfo& a : info.args) {
    if (a.kind == ArgKind::kOther && !a.has_default) {
      return absl::StrCat("its argument '", a.name, "' of type ", a.type,
                          " has no wire form and no default");
    }
  }
  for (const ArgInfo& r : info.returns) {
    if (r.kind == ArgKind::kOther) {
      return absl::StrCat("it returns a ", r.type, ", which has no wire form");
    }
  }
  return "";
}

}  // namespace

namespace {

// The out= overload of `op` that boxed_call.cc may compute a result into (op_handles.h):
// "<overload>_out" or "out", with `op`'s arguments (same names and types) plus one last
// kwarg-only `out` (a written Tensor), returning one Tensor, with a CPU kernel; and `op`
// itself returns one Tensor and has a Meta kernel. nullopt otherwise.
std::optional<c10::OperatorHandle> FindOutOverload(c10::Dispatcher& dispatcher,
                                                   const c10::OperatorHandle& op) {
  const c10::FunctionSchema& schema = op.schema();
  auto one_tensor = [](const std::vector<c10::Argument>& returns) {
    return returns.size() == 1 && returns[0].type()->kind() == c10::TypeKind::TensorType;
  };
  if (!one_tensor(schema.returns()) ||
      !op.hasComputedKernelForDispatchKey(c10::DispatchKey::Meta)) {
    return std::nullopt;
  }
  const std::string& overload = schema.overload_name();
  for (const std::string& candidate :
       {overload.empty() ? std::string("out") : overload + "_out", std::string("out")}) {
    if (candidate == overload) continue;
    std::optional<c10::OperatorHandle> out = dispatcher.findOp({schema.name(), candidate});
    if (!out.has_value() || !out->hasSchema()) continue;
    const c10::FunctionSchema& o = out->schema();
    const auto& args = schema.arguments();
    if (o.arguments().size() != args.size() + 1 || !one_tensor(o.returns()) ||
        !out->hasComputedKernelForDispatchKey(c10::DispatchKey::CPU)) {
      continue;
    }
    bool same = true;
    for (size_t i = 0; i < args.size() && same; ++i) {
      same =
          o.arguments()[i].name() == args[i].name() && *o.arguments()[i].type() == *args[i].type();
    }
    const c10::Argument& last = o.arguments().back();
    if (same && last.name() == "out" && last.is_out() && last.kwarg_only() &&
        last.type()->kind() == c10::TypeKind::TensorType) {
      return out;
    }
  }
  return std::nullopt;
}

// The index of `op`'s one Tensor argument when it decides the result's layout
// (op_handles.h's ResultDtypes): a pointwise op whose other arguments are ints, floats,
// bools or strings (optional or not). nullopt otherwise.
std::optional<size_t> LayoutArgument(const c10::OperatorHandle& op) {
  if (!op.hasTag(at::Tag::pointwise)) return std::nullopt;
  std::optional<size_t> tensor;
  const std::vector<c10::Argument>& args = op.schema().arguments();
  for (size_t i = 0; i < args.size(); ++i) {
    const c10::Type* type = args[i].type().get();
    if (type->kind() == c10::TypeKind::TensorType) {
      if (tensor.has_value()) return std::nullopt;
      tensor = i;
      continue;
    }
    if (type->kind() == c10::TypeKind::OptionalType) {
      type = type->castRaw<c10::OptionalType>()->getElementType().get();
    }
    switch (type->kind()) {
      case c10::TypeKind::IntType:
      case c10::TypeKind::FloatType:
      case c10::TypeKind::BoolType:
      case c10::TypeKind::StringType:
        break;
      default:
        return std::nullopt;
    }
  }
  return tensor;
}

}  // namespace

ResultDtypes::ResultDtypes(size_t tensor_arg) : tensor_arg_(tensor_arg) {
  for (std::atomic<int8_t>& e : by_input_) e.store(kUnknown, std::memory_order_relaxed);
}

int8_t ResultDtypes::Get(DType input) const {
  const auto i = static_cast<size_t>(input);
  return i < by_input_.size() ? by_input_[i].load(std::memory_order_relaxed) : kNoLayout;
}

void ResultDtypes::Set(DType input, int8_t result) {
  const auto i = static_cast<size_t>(input);
  if (i < by_input_.size()) by_input_[i].store(result, std::memory_order_relaxed);
}

struct OpRegistryBuilder {
  static std::shared_ptr<const OpRegistry> Make(std::vector<OpInfo> ops,
                                                std::vector<OpHandle> handles) {
    auto registry = std::make_shared<OpRegistry>(std::move(ops));
    auto table = std::make_shared<OpRegistry::Handles>();
    table->ops = std::move(handles);
    registry->handles_ = std::move(table);
    return registry;
  }
};

absl::StatusOr<std::shared_ptr<const OpRegistry>> OpRegistry::Build(
    const OpPatterns& patterns, const std::vector<ProgramSpec>& programs,
    const ProgramPlacement& placement) {
  c10::Dispatcher& dispatcher = c10::Dispatcher::singleton();
  struct Entry {
    OpInfo info;
    std::optional<c10::OperatorHandle> handle;      // an operator's
    std::shared_ptr<const ProgramPackage> program;  // or a program's
  };
  std::vector<Entry> entries;
  for (const c10::OperatorName& name : dispatcher.getAllOpNames()) {
    if (!patterns.Matches(name.name, name.overload_name)) continue;
    std::optional<c10::OperatorHandle> handle = dispatcher.findOp(name);
    if (!handle.has_value() || !handle->hasSchema()) continue;  // kernels without a schema
    const c10::FunctionSchema& schema = handle->schema();
    OpInfo info;
    info.name = name.name;
    info.overload = name.overload_name;
    std::ostringstream text;
    text << schema;
    info.schema = text.str();
    for (const c10::Argument& a : schema.arguments()) info.args.push_back(Describe(a));
    for (const c10::Argument& r : schema.returns()) info.returns.push_back(Describe(r));
    info.cpu = handle->hasComputedKernelForDispatchKey(c10::DispatchKey::CPU);
    info.cuda = handle->hasComputedKernelForDispatchKey(c10::DispatchKey::CUDA);
    info.pointwise = handle->hasTag(at::Tag::pointwise);
    info.reason = NotServedReason(schema, info);
    if (info.reason.empty() && !info.cpu && !info.cuda) {
      info.reason = "it has no CPU or CUDA kernel";
    }
    info.served = info.reason.empty();
    entries.push_back({std::move(info), *handle, nullptr});
  }
  for (const std::string& p : patterns.patterns()) {
    const bool used = std::any_of(entries.begin(), entries.end(), [&](const Entry& e) {
      return OpPatterns::Parse(p)->Matches(e.info.name, e.info.overload);
    });
    if (!used) {
      return absl::InvalidArgumentError(
          absl::StrCat("no registered operator matches --ops pattern '", p,
                       "' (is its library loaded? --load-library PATH loads one)"));
    }
  }
  for (const ProgramSpec& spec : programs) {
    for (const Entry& e : entries) {
      if (e.program != nullptr && e.info.name == spec.name) {
        return absl::InvalidArgumentError(
            absl::StrCat("two programs are named ", spec.name, " (--program)"));
      }
    }
    auto package = ProgramPackage::Load(spec, placement);
    if (!package.ok()) return package.status();
    entries.push_back({(*package)->info(), std::nullopt, *std::move(package)});
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.info.name, a.info.overload) < std::tie(b.info.name, b.info.overload);
  });
  std::vector<OpInfo> ops;
  std::vector<OpHandle> handles;
  for (Entry& e : entries) {
    ops.push_back(std::move(e.info));
    if (e.program != nullptr) {
      handles.push_back(OpHandle{std::nullopt, std::nullopt, nullptr, std::move(e.program)});
      continue;
    }
    OpHandle handle{e.handle, FindOutOverload(dispatcher, *e.handle), nullptr, nullptr};
    if (handle.out.has_value()) {
      if (std::optional<size_t> arg = LayoutArgument(*e.handle)) {
        handle.result_dtypes = std::make_shared<ResultDtypes>(*arg);
      }
    }
    handles.push_back(std::move(handle));
  }
  return OpRegistryBuilder::Make(std::move(ops), std::move(handles));
}

}  // namespace myops::server
