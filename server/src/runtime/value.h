// Argument and result values of a generic operator call, and the call itself: what a
// front end hands the executor for any served operator. Neither torch nor protobuf:
// front ends fill these from their messages, the runtime turns them into a boxed stack.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "runtime/tensor_view.h"

namespace myops::server {

// One value; `kind` says which member holds it. Tensors are views: argument tensors
// borrow from the request; result tensors hold their memory (TensorView::owner).
struct Value {
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
  Kind kind = Kind::kNone;
  TensorView tensor;
  int64_t int_value = 0;
  double float_value = 0;
  bool bool_value = false;
  std::string string_value;
  std::vector<int64_t> int_list;
  std::vector<double> float_list;
  std::vector<TensorView> tensor_list;
  DType scalar_type = DType::kFloat32;

  // The values front ends and tests make most: a tensor (a view) and a float.
  static Value Tensor(TensorView t) {
    Value v;
    v.kind = Kind::kTensor;
    v.tensor = std::move(t);
    return v;
  }
  static Value Float(double f) {
    Value v;
    v.kind = Kind::kFloat;
    v.float_value = f;
    return v;
  }
};

// Memory an operator call's op allocates on the CPU while it runs, charged to the call.
// Thread-safe: Give may come from any thread, after the call too (results outlive it).
class MemoryCharge {
 public:
  virtual ~MemoryCharge() = default;
  // Before an allocation of `bytes`: a refusal fails it before the memory is taken.
  virtual absl::Status Take(int64_t bytes) = 0;
  // When memory Take granted is freed.
  virtual void Give(int64_t bytes) = 0;
};

// A call's argument as a front end received it: positional when `name` is empty.
struct NamedValue {
  std::string name;
  Value value;
};

// One call of a served operator (an index into the OpRegistry), bound to its schema by
// BindArguments: args[i] is the schema's i-th argument, nullopt taking its default.
// The runner fills `results` (schema order); each result tensor holds its memory
// (TensorView::owner). Owned by the front end's request state; the runner touches it
// only between Submit and the done callback.
struct OpCall {
  int op = -1;
  std::vector<std::optional<Value>> args;
  std::vector<Value> results;
  // Bytes of the argument tensors (for the inline-run decision and the memory budget).
  int64_t input_bytes = 0;
  // Where the front end will put result 0 (a shared memory region, a response's own
  // buffer): on the CPU, an op with an out= overload computes it there, and results[0] is
  // then a view of it (with no owner: the front end keeps the buffer alive). Otherwise the
  // result is in memory of its own, and the front end copies it. data == nullptr: none.
  struct OutputBuffer {
    void* data = nullptr;
    int64_t bytes = 0;
    // Result 0's dtype and shape, when the front end knows them for certain (ScaleShift:
    // its input's): the result is then computed there whatever its size, without asking
    // the op's Meta kernel first. Else, for pointwise ops with one tensor argument, that
    // argument's shape and the dtype the Meta kernel told once per argument dtype
    // (runtime/torch/op_handles.h, ResultDtypes); else the Meta kernel tells, for results
    // of 64 KiB or more.
    struct Layout {
      DType dtype = DType::kFloat32;
      std::vector<int64_t> shape;
    };
    std::optional<Layout> layout;
    // With data == nullptr: a host that makes the buffer once it knows result 0's layout
    // (given in `layout`, else the Meta kernel's) and byte size, on the CPU, for an op with
    // an out= overload; asked at most once per run, on the running thread. It returns the
    // buffer (at least `bytes`, owned by the host until the call is done) or null to
    // decline: the result then comes in memory of its own. Asked only when the layout is
    // known as above, or the call's input is 64 KiB or more (else a copy costs less than
    // the Meta dispatch).
    std::function<void*(const Layout& layout, int64_t bytes)> allocate;
  };
  OutputBuffer result_buffer;
  // What the op allocates on the CPU while it runs is charged here (runtime/torch/
  // charged_allocator.h): an allocation the charge refuses ends the call with its status
  // before the memory is taken. Null: not charged (the front end budgets the results once
  // they exist).
  std::shared_ptr<MemoryCharge> memory;
};

}  // namespace myops::server
