// The operator the Open Inference Protocol fuzz targets decode requests for (no registry,
// no torch): a description built by hand, as op_table.cc would build it from a schema.
#pragma once

#include <initializer_list>
#include <utility>

#include "runtime/op_registry.h"

namespace myops::fuzz {

inline server::ArgInfo FuzzArg(const char* name, server::ArgKind kind) {
  server::ArgInfo a;
  a.name = name;
  a.type = server::ArgKindName(kind);
  a.kind = kind;
  return a;
}

// "fuzz::op", served, with `args` and `returns` (name, kind) in schema order.
inline server::OpInfo FuzzOp(
    std::initializer_list<std::pair<const char*, server::ArgKind>> args,
    std::initializer_list<std::pair<const char*, server::ArgKind>> returns) {
  server::OpInfo op;
  op.name = "fuzz::op";
  op.served = true;
  for (const auto& [name, kind] : args) op.args.push_back(FuzzArg(name, kind));
  for (const auto& [name, kind] : returns) op.returns.push_back(FuzzArg(name, kind));
  return op;
}

}  // namespace myops::fuzz
