// Values of the generic Call API: the arguments and results of any served operator (a
// tensor, int, float, bool, string, int list, float list, tensor list, dtype or none), as
// myops.v1.Value carries them (proto/myops/v1/myops.proto), without protobuf types.
//
//   std::vector<myops::client::Value> args = {x_view, 2.0, 1.0};  // Tensor, float, float
//   client->Call("myops::scale_shift", args);
//   client->Call("torchvision::nms", {boxes, scores}, {{"iou_threshold", 0.5}});
//
// A tensor value either borrows caller memory (a TensorView: nothing is copied until the
// call encodes it) or owns a Tensor (results always own theirs).
#ifndef MYOPS_CLIENT_VALUE_H_
#define MYOPS_CLIENT_VALUE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "absl/strings/string_view.h"
#include "myops/client/tensor.h"

namespace myops::client {

// One argument or result value. A plain value type: copying a borrowed tensor copies the
// view (never the data); copying an owned tensor copies its bytes. Thread-compatible.
//
// Integers become kInt (int64_t; a uint64_t above INT64_MAX wraps), floating-point values
// kFloat, `true`/`false` kBool, strings kString, std::vector<int64_t> kIntList,
// std::vector<double> kFloatList, a DType kScalarType, and Value() / std::nullopt kNone.
// Braced lists such as {1, 2} are ambiguous: use Value::IntList / Value::FloatList.
class Value {
 public:
  // Kinds of values; each matches one field of the wire's Value.
  enum class Kind {
    kNone,
    kTensor,
    kInt,
    kFloat,
    kBool,
    kString,
    kIntList,
    kFloatList,
    kTensorList,
    kScalarType,
  };

  Value() = default;        // kNone.
  Value(std::nullopt_t) {}  // NOLINT(google-explicit-constructor): kNone.
  // A borrowed tensor: `tensor.data` must stay valid and unchanged until the call that
  // takes this value returns (for CallAsync and stream Send: until they return).
  Value(const TensorView& tensor) : data_(tensor) {}                   // NOLINT
  Value(const MutableTensorView& tensor) : data_(tensor.AsConst()) {}  // NOLINT
  Value(Tensor tensor) : data_(std::move(tensor)) {}                   // NOLINT: an owned tensor.
  template <typename T,
            std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  Value(T value) : data_(static_cast<int64_t>(value)) {}                 // NOLINT
  Value(bool value) : data_(value) {}                                    // NOLINT
  Value(double value) : data_(value) {}                                  // NOLINT
  Value(const char* value) : data_(std::string(value)) {}                // NOLINT
  Value(std::string value) : data_(std::move(value)) {}                  // NOLINT
  Value(std::vector<int64_t> values) : data_(std::move(values)) {}       // NOLINT
  Value(std::vector<double> values) : data_(std::move(values)) {}        // NOLINT
  Value(std::vector<TensorView> tensors) : data_(std::move(tensors)) {}  // NOLINT: borrowed.
  Value(std::vector<Tensor> tensors) : data_(std::move(tensors)) {}      // NOLINT: owned.
  Value(DType dtype) : data_(dtype) {}                                   // NOLINT: a ScalarType.

  // Named constructors, for clarity where the implicit ones read ambiguously.
  static Value None() { return Value(); }
  static Value Int(int64_t value) { return Value(value); }
  static Value Float(double value) { return Value(value); }
  static Value Bool(bool value) { return Value(value); }
  static Value String(std::string value) { return Value(std::move(value)); }
  static Value IntList(std::vector<int64_t> values) { return Value(std::move(values)); }
  static Value FloatList(std::vector<double> values) { return Value(std::move(values)); }
  static Value ScalarType(DType dtype) { return Value(dtype); }

  Kind kind() const;
  bool is_none() const { return kind() == Kind::kNone; }
  // Whether a kTensor / kTensorList value owns its tensors (results do).
  bool owns_tensors() const;

  // Accessors; each requires kind() to be its kind (else std::bad_variant_access).
  // tensor() views the data of a borrowed or owned tensor (owned: valid while this Value
  // lives and is not modified).
  TensorView tensor() const;
  int64_t int_value() const { return std::get<int64_t>(data_); }
  double float_value() const { return std::get<double>(data_); }
  bool bool_value() const { return std::get<bool>(data_); }
  const std::string& string_value() const { return std::get<std::string>(data_); }
  const std::vector<int64_t>& int_list() const { return std::get<std::vector<int64_t>>(data_); }
  const std::vector<double>& float_list() const { return std::get<std::vector<double>>(data_); }
  std::vector<TensorView> tensor_list() const;
  DType scalar_type() const { return std::get<DType>(data_); }

  // Moves an owned tensor (list) out, or copies a borrowed one; this value becomes kNone.
  // Requires kind() kTensor (TakeTensor) or kTensorList (TakeTensorList).
  Tensor TakeTensor();
  std::vector<Tensor> TakeTensorList();

 private:
  std::variant<std::monostate, TensorView, Tensor, int64_t, double, bool, std::string,
               std::vector<int64_t>, std::vector<double>, std::vector<TensorView>,
               std::vector<Tensor>, DType>
      data_;
};

// "none", "tensor", "int", "float", "bool", "string", "int list", "float list",
// "tensor list", "dtype".
absl::string_view ValueKindName(Value::Kind kind);

// An argument passed by the schema's argument name (a keyword argument).
struct NamedArg {
  std::string name;
  Value value;
};

}  // namespace myops::client

#endif  // MYOPS_CLIENT_VALUE_H_
