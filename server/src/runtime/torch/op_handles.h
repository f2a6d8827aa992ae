// The torch side of the registry: the dispatcher handle of each listed operator, in the
// registry's order. Private to the runtime's torch translation units.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>

#include <optional>
#include <vector>

#include "runtime/op_registry.h"

namespace myops::server {

// One listed operator's handles: the operator, and its out= overload when it has one
// that a result can be computed into (op_table.cc's FindOutOverload: the same arguments
// plus `*, Tensor(a!) out`, one Tensor returned, and a Meta kernel that tells the result's
// shape and dtype before it runs).
struct OpHandle {
  c10::OperatorHandle op;
  std::optional<c10::OperatorHandle> out;
};

struct OpRegistry::Handles {
  std::vector<OpHandle> ops;
};

}  // namespace myops::server
