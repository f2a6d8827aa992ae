// Test support: an operator argument as the registry describes it (runtime/op_registry.h),
// for tests that build OpInfo descriptions by hand. Header-only.
#pragma once

#include <string>
#include <utility>

#include "runtime/op_registry.h"

namespace myops::server::testing {

inline ArgInfo Arg(std::string name, std::string type, ArgKind kind) {
  ArgInfo a;
  a.name = std::move(name);
  a.type = std::move(type);
  a.kind = kind;
  return a;
}

}  // namespace myops::server::testing
