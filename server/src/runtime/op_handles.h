// The torch side of the registry: the dispatcher handle of each listed operator, in the
// registry's order. Private to the runtime's torch translation units.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>

#include <vector>

#include "op_registry.h"

namespace myops::server {

struct OpRegistry::Handles {
  std::vector<c10::OperatorHandle> ops;
};

}  // namespace myops::server
