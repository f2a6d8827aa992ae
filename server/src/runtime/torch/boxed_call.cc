// Boxed calls of served operators (see boxed_call.h).
#include "runtime/torch/boxed_call.h"

#include <ATen/core/List.h>
#include <ATen/core/stack.h>
#include <ATen/ops/from_blob.h>
#include <c10/util/Exception.h>
#include <c10/util/accumulate.h>

#include "runtime/exception_status.h"
#include "runtime/torch/charged_allocator.h"
#include "runtime/torch/program_package.h"
#include "runtime/torch/runner.h"

namespace myops::server {
namespace {

at::Tensor ToTensor(const TensorView& v, c10::Device device) {
  at::Tensor t = WrapCpu(v.data, v.shape, v.dtype);
  return device.is_cpu() ? t : t.to(device);
}

c10::IValue ToIValue(const Value& v, const c10::Argument& arg, c10::Device device) {
  const c10::Type* type = arg.type().get();  // borrowed: no reference count per argument
  if (type->kind() == c10::TypeKind::OptionalType) {
    type = type->castRaw<c10::OptionalType>()->getElementType().get();
  }
  using K = Value::Kind;
  switch (v.kind) {
    case K::kNone:
      return c10::IValue();
    case K::kTensor:
      return ToTensor(v.tensor, device);
    case K::kInt:
      if (type->kind() == c10::TypeKind::FloatType) return static_cast<double>(v.int_value);
      if (type->kind() == c10::TypeKind::ListType) {  // one int for a whole int[N]
        return std::vector<int64_t>(static_cast<size_t>(arg.N().value_or(1)), v.int_value);
      }
      return v.int_value;
    case K::kFloat:
      return v.float_value;
    case K::kBool:
      return v.bool_value;
    case K::kString:
      return v.string_value;
    case K::kIntList:
      if (type->castRaw<c10::ListType>()->getElementType()->kind() == c10::TypeKind::FloatType) {
        return std::vector<double>(v.int_list.begin(), v.int_list.end());
      }
      return v.int_list;
    case K::kFloatList:
      return v.float_list;
    case K::kTensorList: {
      c10::List<at::Tensor> list;
      list.reserve(v.tensor_list.size());
      for (const TensorView& t : v.tensor_list) list.push_back(ToTensor(t, device));
      return list;
    }
    case K::kScalarType:
      return static_cast<int64_t>(ToScalarType(v.scalar_type));
  }
  TORCH_CHECK(false, "unknown value kind");
}

// The wire dtype of a PyTorch dtype: ToScalarType (the one torch mapping) inverted over
// the dtype table; nullopt for dtypes the wire does not carry (complex, ...).
std::optional<DType> FromScalarType(c10::ScalarType t) {
  for (const DTypeInfo& info : kDTypeTable) {
    if (ToScalarType(info.dtype) == t) return info.dtype;
  }
  return std::nullopt;
}

// Whether `t`'s memory lies within one of the call's argument tensors (an op returning
// an input as is): such a result must be copied, the request's memory is not ours to lend.
bool InArguments(const at::Tensor& t, const OpCall& call) {
  const auto* begin = static_cast<const char*>(t.storage().data());
  auto within = [begin](const TensorView& v) {
    const auto* data = static_cast<const char*>(v.data);
    return data != nullptr && begin >= data && begin < data + v.bytes;
  };
  for (const auto& arg : call.args) {
    if (!arg.has_value()) continue;
    if (arg->kind == Value::Kind::kTensor && within(arg->tensor)) return true;
    for (const TensorView& v : arg->tensor_list) {
      if (within(v)) return true;
    }
  }
  return false;
}

TensorView ToResultTensor(at::Tensor t, const OpCall& call) {
  auto dtype = FromScalarType(t.scalar_type());
  if (!dtype.has_value()) {
    throw c10::NotImplementedError({__func__, __FILE__, static_cast<uint32_t>(__LINE__)},
                                   std::string("the operator returned a tensor of dtype ") +
                                       c10::toString(t.scalar_type()) +
                                       ", which the wire cannot carry");
  }
  if (!t.device().is_cpu()) t = t.cpu();
  if (!t.is_contiguous() || t.storage_offset() != 0 || (t.numel() > 0 && InArguments(t, call))) {
    t = t.contiguous().clone();
  }
  TensorView view;
  view.dtype = *dtype;
  view.shape = t.sizes().vec();
  view.data = t.data_ptr();
  view.bytes = static_cast<int64_t>(t.nbytes());
  view.owner = std::make_shared<at::Tensor>(std::move(t));
  return view;
}

Value ToResult(const c10::IValue& v, OpCall& call) {
  Value out;
  using K = Value::Kind;
  if (v.isNone()) {
    out.kind = K::kNone;
  } else if (v.isTensor()) {
    if (!v.toTensor().defined()) return out;  // an undefined Tensor? result: None
    out.kind = K::kTensor;
    out.tensor = ToResultTensor(v.toTensor(), call);
  } else if (v.isTensorList()) {
    out.kind = K::kTensorList;
    for (const at::Tensor& t : v.toTensorVector()) {
      out.tensor_list.push_back(ToResultTensor(t, call));
    }
  } else if (v.isInt() || v.isSymInt()) {
    out.kind = K::kInt;
    out.int_value = v.isInt() ? v.toInt() : v.toSymInt().guard_int(__FILE__, __LINE__);
  } else if (v.isDouble()) {
    out.kind = K::kFloat;
    out.float_value = v.toDouble();
  } else if (v.isBool()) {
    out.kind = K::kBool;
    out.bool_value = v.toBool();
  } else if (v.isString()) {
    out.kind = K::kString;
    out.string_value = v.toStringRef();
  } else if (v.isIntList()) {
    out.kind = K::kIntList;
    out.int_list = v.toIntVector();
  } else if (v.isDoubleList()) {
    out.kind = K::kFloatList;
    out.float_list = v.toDoubleVector();
  } else {
    throw c10::NotImplementedError(
        {__func__, __FILE__, static_cast<uint32_t>(__LINE__)},
        "the operator returned a " + v.tagKind() + ", which the wire cannot carry");
  }
  return out;
}

// The boxed arguments of `call` for `schema`, tensors on `device`.
torch::jit::Stack Arguments(const c10::FunctionSchema& schema, const OpCall& call,
                            c10::Device device) {
  torch::jit::Stack stack;
  stack.reserve(schema.arguments().size() + 1);
  for (size_t i = 0; i < schema.arguments().size(); ++i) {
    const c10::Argument& arg = schema.arguments()[i];
    if (i < call.args.size() && call.args[i].has_value()) {
      stack.push_back(ToIValue(*call.args[i], arg, device));
    } else {
      stack.push_back(*arg.default_value());  // BindArguments checked it has one
    }
  }
  return stack;
}

// The shape and dtype of `op`'s result for `call`, from its Meta kernel (no data touched);
// nullopt when the kernel cannot tell (data-dependent shapes raise there: the op then runs
// the ordinary way, which reports its own errors).
std::optional<at::Tensor> MetaResult(const c10::OperatorHandle& op, const OpCall& call) {
  // An op whose Meta implementation is registered from Python (a "pystub": torchvision's
  // nms) and has no Meta kernel in C++: the Meta dispatch would ask a Python interpreter
  // this process does not run (it crashes there), so the op cannot tell.
  if (!op.hasKernelForDispatchKey(c10::DispatchKey::Meta) &&
      c10::Dispatcher::singleton().getPyStub(op.operator_name()).has_value()) {
    return std::nullopt;
  }
  torch::jit::Stack stack = Arguments(op.schema(), call, c10::Device(c10::kMeta));
  try {
    op.callBoxed(stack);
  } catch (const c10::Error&) {
    return std::nullopt;
  }
  if (stack.size() != 1 || !stack[0].isTensor()) return std::nullopt;
  return stack[0].toTensor();
}

// Result 0's layout for `call` as the op's Meta kernel tells it; nullopt when it cannot
// tell, or the result has no wire dtype.
std::optional<OpCall::OutputBuffer::Layout> MetaLayout(const OpHandle& op, const OpCall& call) {
  std::optional<at::Tensor> meta = MetaResult(*op.op, call);
  if (!meta.has_value()) return std::nullopt;
  const std::optional<DType> dtype = FromScalarType(meta->scalar_type());
  if (!dtype.has_value()) return std::nullopt;
  return OpCall::OutputBuffer::Layout{*dtype, meta->sizes().vec()};
}

// Below this a result is cheaper to copy into the buffer than to compute there when the
// Meta kernel must be asked for its layout first (that costs a dispatch).
constexpr int64_t kMinInPlaceBytes = 64 << 10;

// Result 0's layout for `call`, when it is worth computing the result into a buffer: the
// buffer's own; else, for ops whose tensor argument decides it (ResultDtypes), that
// argument's shape and the dtype the Meta kernel told once for its dtype; else, for
// results of 64 KiB or more, the Meta kernel's. nullopt when unknown or not worth a Meta
// dispatch.
std::optional<OpCall::OutputBuffer::Layout> ResultLayout(const OpHandle& op, const OpCall& call) {
  const OpCall::OutputBuffer& buffer = call.result_buffer;
  if (buffer.layout.has_value()) return buffer.layout;
  if (op.result_dtypes != nullptr) {
    const size_t index = op.result_dtypes->tensor_arg();
    const Value* arg =
        index < call.args.size() && call.args[index].has_value() ? &*call.args[index] : nullptr;
    if (arg != nullptr && arg->kind == Value::Kind::kTensor) {
      const TensorView& t = arg->tensor;
      const int8_t known = op.result_dtypes->Get(t.dtype);
      if (known >= 0) return OpCall::OutputBuffer::Layout{static_cast<DType>(known), t.shape};
      if (known == ResultDtypes::kUnknown) {
        std::optional<OpCall::OutputBuffer::Layout> meta = MetaLayout(op, call);
        if (!meta.has_value()) return std::nullopt;  // this call's own arguments may be why
        const bool follows = meta->shape == t.shape;
        op.result_dtypes->Set(t.dtype,
                              follows ? static_cast<int8_t>(meta->dtype) : ResultDtypes::kNoLayout);
        return meta;
      }
    }
  }
  const int64_t size = buffer.data != nullptr ? buffer.bytes : call.input_bytes;
  if (size < kMinInPlaceBytes) return std::nullopt;
  return MetaLayout(op, call);
}

// Computes result 0 of `call`, of `layout`, into call.result_buffer (its memory, or the
// host's from its allocate) through `op.out`; false (nothing run) when it does not fit or
// the host declines.
bool RunIntoBuffer(const OpHandle& op, OpCall::OutputBuffer::Layout layout, OpCall& call) {
  const OpCall::OutputBuffer& buffer = call.result_buffer;
  void* data = buffer.data;
  int64_t capacity = buffer.bytes;
  if (data == nullptr) {
    capacity = static_cast<int64_t>(c10::multiply_integers(layout.shape)) * ItemSize(layout.dtype);
    data = buffer.allocate(layout, capacity);
    if (data == nullptr) return false;
  }
  // Kernels store whole elements: a buffer misaligned for the result's dtype (a region at
  // an odd offset) gets the result copied into it instead.
  if (reinterpret_cast<uintptr_t>(data) % static_cast<uintptr_t>(ItemSize(layout.dtype)) != 0) {
    return false;
  }
  at::Tensor out = WrapCpu(data, layout.shape, layout.dtype);
  if (static_cast<int64_t>(out.nbytes()) > capacity) return false;
  torch::jit::Stack stack = Arguments(op.op->schema(), call, c10::Device(c10::kCPU));
  stack.push_back(out);
  op.out->callBoxed(stack);
  call.results.clear();
  call.results.reserve(1);
  const at::Tensor& result = stack.at(0).toTensor();
  if (result.data_ptr() != data || !result.is_contiguous() || result.sizes() != out.sizes()) {
    // The kernel resized or replaced `out`: an ordinary result, copied by the front end.
    call.results.push_back(ToResult(stack[0], call));
    return true;
  }
  Value value;
  value.kind = Value::Kind::kTensor;
  value.tensor.dtype = layout.dtype;
  value.tensor.shape = std::move(layout.shape);
  value.tensor.data = data;
  value.tensor.bytes = static_cast<int64_t>(result.nbytes());
  // No owner: the front end owns the buffer.
  call.results.push_back(std::move(value));
  return true;
}

// Runs a program's call on `device` (BindArguments checked its inputs against the
// signature).
void RunProgram(const ProgramPackage& program, OpCall& call, c10::Device device) {
  std::vector<at::Tensor> inputs;
  inputs.reserve(call.args.size());
  for (const std::optional<Value>& arg : call.args) inputs.push_back(ToTensor(arg->tensor, device));
  std::vector<at::Tensor> outputs = program.Run(std::move(inputs), device);
  call.results.clear();
  call.results.reserve(outputs.size());
  for (at::Tensor& t : outputs) call.results.push_back(ToResult(std::move(t), call));
}

}  // namespace

void RunBoxed(const OpHandle& op, OpCall& call, c10::Device device) {
  const ChargeScope charged(call.memory);
  if (op.program != nullptr) return RunProgram(*op.program, call, device);
  const OpCall::OutputBuffer& buffer = call.result_buffer;
  if (device.is_cpu() && op.out.has_value() &&
      (buffer.data != nullptr || buffer.allocate != nullptr)) {
    std::optional<OpCall::OutputBuffer::Layout> layout = ResultLayout(op, call);
    if (layout.has_value() && RunIntoBuffer(op, *std::move(layout), call)) return;
  }
  torch::jit::Stack stack = Arguments(op.op->schema(), call, device);
  op.op->callBoxed(stack);
  call.results.clear();
  call.results.reserve(stack.size());
  for (const c10::IValue& v : stack) call.results.push_back(ToResult(v, call));
}

}  // namespace myops::server
