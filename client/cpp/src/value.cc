// Value's accessors and the names of value and schema kinds (see myops/client/value.h and
// myops/client/results.h).
#include "myops/client/value.h"

#include <utility>

#include "myops/client/results.h"

namespace myops::client {

Value::Kind Value::kind() const {
  switch (data_.index()) {
    case 0:
      return Kind::kNone;
    case 1:
    case 2:
      return Kind::kTensor;
    case 3:
      return Kind::kInt;
    case 4:
      return Kind::kFloat;
    case 5:
      return Kind::kBool;
    case 6:
      return Kind::kString;
    case 7:
      return Kind::kIntList;
    case 8:
      return Kind::kFloatList;
    case 9:
    case 10:
      return Kind::kTensorList;
    default:
      return Kind::kScalarType;
  }
}

bool Value::owns_tensors() const {
  return std::holds_alternative<Tensor>(data_) ||
         std::holds_alternative<std::vector<Tensor>>(data_);
}

TensorView Value::tensor() const {
  if (const Tensor* owned = std::get_if<Tensor>(&data_)) return owned->view();
  return std::get<TensorView>(data_);
}

std::vector<TensorView> Value::tensor_list() const {
  if (const auto* owned = std::get_if<std::vector<Tensor>>(&data_)) {
    std::vector<TensorView> views;
    views.reserve(owned->size());
    for (const Tensor& t : *owned) views.push_back(t.view());
    return views;
  }
  return std::get<std::vector<TensorView>>(data_);
}

namespace {

Tensor Copy(const TensorView& view) {
  return Tensor(view.dtype, view.shape,
                view.size_bytes == 0
                    ? std::string()
                    : std::string(static_cast<const char*>(view.data), view.size_bytes));
}

}  // namespace

Tensor Value::TakeTensor() {
  Tensor result;
  if (Tensor* owned = std::get_if<Tensor>(&data_)) {
    result = std::move(*owned);
  } else {
    result = Copy(std::get<TensorView>(data_));
  }
  data_ = std::monostate();
  return result;
}

std::vector<Tensor> Value::TakeTensorList() {
  std::vector<Tensor> result;
  if (auto* owned = std::get_if<std::vector<Tensor>>(&data_)) {
    result = std::move(*owned);
  } else {
    for (const TensorView& view : std::get<std::vector<TensorView>>(data_)) {
      result.push_back(Copy(view));
    }
  }
  data_ = std::monostate();
  return result;
}

absl::string_view ValueKindName(Value::Kind kind) {
  switch (kind) {
    case Value::Kind::kNone:
      return "none";
    case Value::Kind::kTensor:
      return "tensor";
    case Value::Kind::kInt:
      return "int";
    case Value::Kind::kFloat:
      return "float";
    case Value::Kind::kBool:
      return "bool";
    case Value::Kind::kString:
      return "string";
    case Value::Kind::kIntList:
      return "int list";
    case Value::Kind::kFloatList:
      return "float list";
    case Value::Kind::kTensorList:
      return "tensor list";
    case Value::Kind::kScalarType:
      return "dtype";
  }
  return "unknown";
}

absl::string_view SchemaKindName(SchemaKind kind) {
  switch (kind) {
    case SchemaKind::kTensor:
      return "tensor";
    case SchemaKind::kInt:
      return "int";
    case SchemaKind::kFloat:
      return "float";
    case SchemaKind::kBool:
      return "bool";
    case SchemaKind::kString:
      return "string";
    case SchemaKind::kIntList:
      return "int list";
    case SchemaKind::kFloatList:
      return "float list";
    case SchemaKind::kTensorList:
      return "tensor list";
    case SchemaKind::kScalar:
      return "scalar";
    case SchemaKind::kScalarType:
      return "dtype";
    case SchemaKind::kOther:
      return "other";
    case SchemaKind::kUnspecified:
      break;
  }
  return "unspecified";
}

}  // namespace myops::client
