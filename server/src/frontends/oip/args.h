// The Open Inference Protocol's rules for a request's inputs, parameters and outputs,
// independent of the binding that carried them (gRPC: frontends/oip/inputs.cc, HTTP/REST:
// frontends/oip/rest/json.cc), so both front ends apply the same checks with the same messages.
// The mapping itself is written down in frontends/oip/codec.h. Neither torch nor protobuf.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>
#include "absl/strings/string_view.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "frontends/oip/datatypes.h"
#include "runtime/op_registry.h"
#include "runtime/value.h"
#include "shm/region_io.h"

namespace myops::server::kserve {

// The only version of every model.
inline constexpr char kModelVersion[] = "1";

// The index of the served op that model `name` (version `version`: empty or "1") is;
// NOT_FOUND saying why not.
absl::StatusOr<int> FindModel(const OpRegistry& registry, const std::string& name,
                              const std::string& version);

// The model's output names, in schema order.
std::vector<std::string> OutputNames(const OpInfo& op);

// One input or output of a model as the protocol's metadata lists it (codec.h has the
// mapping): a Tensor (each element of a Tensor[]) FP32 of shape [-1] (any datatype and
// shape accepted); int INT64, float and Scalar FP64, bool BOOL, shape [1]; int[] INT64,
// float[] FP64, shape [-1]; a str return BYTES [1]. `optional`: an input the schema need
// not be given (a default, or None accepted).
struct TensorSpec {
  std::string name;
  const char* datatype = "FP32";
  std::vector<int64_t> shape;
  bool optional = false;
  bool tensor = false;  // a Tensor (or an element of a Tensor[]), not a scalar or list
};
struct ModelSpec {
  std::vector<TensorSpec> inputs;  // the arguments an input tensor can carry (not str ones)
  std::vector<TensorSpec> outputs;
};
ModelSpec DescribeOp(const OpInfo& op);

// "<name>__<index>": the input or output of element `index` of a Tensor[] argument or
// return named `name`.
std::string ElementName(const std::string& name, size_t index);

// A name read as "<name>__<index>" (the last "__"; index decimal, without leading zeros,
// below 10^9); nullopt when it is not of that form.
struct ElementRef {
  std::string name;
  int index = 0;
};
std::optional<ElementRef> SplitElementName(const std::string& name);

using server::Scratch;  // shm/region_io.h: copies that argument tensors point into

// One input tensor as a binding received it: `count` elements of `type` at `data`,
// `stride` bytes apart (type->size, or 4 for INT8/INT16/UINT8 in 32-bit carriers).
struct InputTensor {
  std::string name;
  const Datatype* type = nullptr;
  std::vector<int64_t> shape;
  const void* data = nullptr;
  int64_t count = 0;
  int64_t stride = 0;
};

// One request parameter as a binding received it.
struct Parameter {
  enum class Kind { kNone, kBool, kInt64, kUint64, kDouble, kString, kOther };
  std::string name;
  Kind kind = Kind::kNone;
  bool bool_value = false;
  int64_t int64_value = 0;
  uint64_t uint64_value = 0;
  double double_value = 0;
  std::string string_value;
  std::string other;  // kOther: what it is instead (e.g. "a JSON array")
};

// "input 'x' of model myops::scale_shift": how messages name an input.
std::string InputField(const std::string& input, const std::string& model);

// "[2, 3]".
std::string ShapeString(absl::Span<const int64_t> shape);

// The datatype named `name`; INVALID_ARGUMENT naming `field` and the datatypes there are.
absl::StatusOr<const Datatype*> ParseDatatype(const std::string& name, const std::string& field);

// The element count of `shape` (each dim >= 0, at most limits.max_dims dims, the product
// and its bytes of `item_size` computed without overflow and within `limits`);
// INVALID_ARGUMENT naming `field` otherwise.
absl::StatusOr<int64_t> Elements(absl::Span<const int64_t> shape, int64_t item_size,
                                 const std::string& field, const TensorLimits& limits);

// Checks `bytes` as the raw data of `in` (type and count set): exactly count * size
// bytes (CheckRawSize), and for BOOL each byte 0 or 1 (any other makes reading a C++ bool
// undefined). `what` names where the bytes were ("raw contents", "binary data").
absl::Status CheckRawSize(const InputTensor& in, uint64_t size, const std::string& field,
                          const char* what);
absl::Status CheckRawData(const InputTensor& in, absl::string_view bytes, const std::string& field,
                          const char* what);

// Input `in` as a named argument of `op`: unnamed arguments become kNone (BindArguments
// names them), an element "<xs>__<i>" of a Tensor[] argument `xs` a tensor under its own
// name (GroupTensorLists makes the list), tensors needing narrowing are copied into
// `scratch`. INVALID_ARGUMENT naming the input when its datatype or element count does
// not fit the argument.
absl::StatusOr<NamedValue> InputArgument(const OpInfo& op, const InputTensor& in, Scratch* scratch);

// Replaces the elements among `args` (InputArgument's) of each Tensor[] argument by the
// list, in element order. INVALID_ARGUMENT unless they are numbered 0..n-1, each once.
absl::Status GroupTensorLists(const OpInfo& op, std::vector<NamedValue>* args);

// Parameter `p` as a named argument of `op`; nullopt when it names no argument (clients
// send their own parameters). INVALID_ARGUMENT for a tensor argument or a value that
// cannot be one.
absl::StatusOr<std::optional<NamedValue>> ParameterArgument(const OpInfo& op, const Parameter& p);

// The arguments of a request of `op` with `inputs` and `parameters`: its inputs
// (InputArgument; narrowed copies kept in `scratch`), grouped into Tensor[] arguments
// (GroupTensorLists), then its parameters (ParameterArgument), with their errors.
absl::StatusOr<std::vector<NamedValue>> RequestArguments(const OpInfo& op,
                                                         const std::vector<InputTensor>& inputs,
                                                         const std::vector<Parameter>& parameters,
                                                         Scratch* scratch);

// Request parameter `p` as the request's timeout when it is "timeout" (Triton's, which
// tritonclient's `timeout=` sends: the microseconds the server may take, from receipt)
// and no argument of `op` has that name: the microseconds, 0 for none; nullopt for any
// other parameter. INVALID_ARGUMENT when it is not an integer >= 0.
absl::StatusOr<std::optional<int64_t>> TimeoutParameter(const OpInfo& op, const Parameter& p);

// The output parameter "classification" among `params` (an output's own; Triton's
// classification extension, tritonclient's class_count): the number of top classes the
// output is asked for as, 0 when absent. INVALID_ARGUMENT naming `field` when it is not
// an integer >= 0.
absl::StatusOr<int64_t> ClassificationCount(const std::vector<Parameter>& params,
                                            const std::string& field);

// One output of a response as requested: result `result` of the op (schema order), and of
// a Tensor[] result one element (`element` >= 0) or every element in order (-1).
struct OutputRef {
  int result = 0;
  int element = -1;
};

// Which results, in which order, the response holds, by the names requested (every
// result, in schema order, when none): a return's name, or "<r>__<j>" for element j of a
// Tensor[] return r. INVALID_ARGUMENT naming an unknown output or one requested twice
// (also as a whole list and one of its elements).
absl::StatusOr<std::vector<OutputRef>> SelectOutputs(const OpInfo& op,
                                                     const std::vector<std::string>& requested);

// One output of a response: the result `result` of the call as the protocol carries it.
// Tensor results are views of the call's memory (valid while the call lives); other
// results are encoded into `owned` (INT64, FP64, BOOL bytes, BYTES with a 4-byte length).
struct OutputTensor {
  std::string name;
  const Datatype* type = nullptr;  // nullptr: BYTES
  std::vector<int64_t> shape;
  size_t result = 0;
  int element = -1;     // of a Tensor[] result
  size_t selected = 0;  // the index in `selected` (the request's outputs) it answers
  bool is_tensor = false;
  bool in_shared_memory = false;  // written to the request's region: sent without bytes
  const void* tensor_data = nullptr;
  int64_t tensor_bytes = 0;
  std::string owned;

  absl::string_view bytes() const {
    return is_tensor ? absl::string_view(static_cast<const char*>(tensor_data),
                                         static_cast<size_t>(tensor_bytes))
                     : absl::string_view(owned);
  }
  const char* datatype() const { return type != nullptr ? type->name : "BYTES"; }
};

// The outputs `selected` of `call`'s results: a Tensor[] result one output per element,
// "<r>__<j>"; a None result (optional return) left out. INTERNAL when the op returned
// fewer results than its schema says; INVALID_ARGUMENT for an element beyond a returned
// list's end; UNIMPLEMENTED for a tensor of a dtype without datatype.
absl::StatusOr<std::vector<OutputTensor>> ResultOutputs(const OpInfo& op, const OpCall& call,
                                                        const std::vector<OutputRef>& selected);

// Output `out` (a tensor) replaced by its top `count` classes, as Triton gives them:
// BYTES of shape [min(count, elements)], each "value:index" (std::to_string of both), by
// value, largest first (std::sort, as Triton orders them). INVALID_ARGUMENT, in Triton's
// words, for a datatype other than the integers, FP32 and FP64, or over 10^6 elements.
absl::Status Classify(int64_t count, OutputTensor* out);

}  // namespace myops::server::kserve
