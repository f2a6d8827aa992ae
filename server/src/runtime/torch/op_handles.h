// The torch side of the registry: the dispatcher handle of each listed operator, in the
// registry's order. Private to the runtime's torch translation units.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "myops/common/dtype.h"
#include "runtime/op_registry.h"

namespace myops::server {

// Result 0's dtype for each dtype of an op's one tensor argument, for ops whose result
// layout that argument decides (op_table.cc's LayoutArgument: pointwise, one Tensor
// argument, the others ints, floats, bools or strings, so no Scalar or dtype argument can
// change the result's dtype): the result has the argument's shape and the dtype the Meta
// kernel told for the first call with that argument dtype. Shared by every thread that
// runs the op: each entry is written at most once per value (racing writers store the
// same answer) and read without a lock.
class ResultDtypes {
 public:
  explicit ResultDtypes(size_t tensor_arg);
  // The argument that decides the layout, by index in the schema's arguments.
  size_t tensor_arg() const { return tensor_arg_; }
  // kUnknown: not asked yet; kNoLayout: the Meta kernel could not tell, or its shape was
  // not the argument's (the op runs the ordinary way); else the result's DType.
  static constexpr int8_t kUnknown = -1;
  static constexpr int8_t kNoLayout = -2;
  int8_t Get(DType input) const;
  void Set(DType input, int8_t result);

 private:
  size_t tensor_arg_;
  std::array<std::atomic<int8_t>, kNumDTypes + 1> by_input_;  // indexed by wire value
};

class ProgramPackage;  // runtime/torch/program_package.h

// One listed operator's handles: the operator, and its out= overload when it has one
// that a result can be computed into (op_table.cc's FindOutOverload: the same arguments
// plus `*, Tensor(a!) out`, one Tensor returned, and a Meta kernel that tells the result's
// shape and dtype before it runs). For a program (OpInfo::program), its package instead.
struct OpHandle {
  std::optional<c10::OperatorHandle> op;
  std::optional<c10::OperatorHandle> out;
  // Set for ops with an out= overload whose one tensor argument decides the result's
  // layout: their results are computed into a host's buffer at every size.
  std::shared_ptr<ResultDtypes> result_dtypes;
  std::shared_ptr<const ProgramPackage> program;
};

struct OpRegistry::Handles {
  std::vector<OpHandle> ops;
};

}  // namespace myops::server
