// The operator registry: which operators this server serves, described without torch
// types. Built once at start-up from PyTorch's operator table (c10::Dispatcher) for the
// operators matching the --ops patterns; immutable afterwards and safe to share between
// threads. Front ends list it and look ops up by name; BindArguments checks a call's
// arguments against an op's schema before anything runs.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/program.h"
#include "runtime/value.h"

namespace myops::server {

// How a schema type travels on the wire.
enum class ArgKind {
  kTensor,
  kInt,  // int, SymInt
  kFloat,
  kBool,
  kString,
  kIntList,  // int[], SymInt[], int[N]
  kFloatList,
  kTensorList,
  kScalar,      // int, float or bool
  kScalarType,  // ScalarType
  kOther,       // not expressible: the op is not served
};

const char* ArgKindName(ArgKind kind);  // "Tensor", "int", "int[]", ...

struct ArgInfo {
  std::string name;
  std::string type;  // the schema's text, e.g. "Tensor?", "int[2]"
  ArgKind kind = ArgKind::kOther;
  bool optional = false;  // accepts None
  bool has_default = false;
  std::string default_text;
  bool kwarg_only = false;
  // A program's tensor: what it accepts (arguments) or returns. Unset for operators,
  // whose tensors may have any dtype and shape their kernels accept.
  std::optional<TensorSignature> signature;
};

struct OpInfo {
  std::string name;      // "namespace::name"
  std::string overload;  // "" for the default overload
  std::string schema;    // the registered schema, as PyTorch prints it
  std::vector<ArgInfo> args;
  std::vector<ArgInfo> returns;
  // Which of the server's devices have kernels, by kind.
  bool cpu = false;
  bool cuda = false;
  // Tagged pointwise (at::Tag::pointwise): each result element depends only on the
  // argument elements at its index (tensors broadcast), so calls that differ only in
  // their tensors may run as one, concatenated along dimension 0.
  bool pointwise = false;
  bool served = false;
  std::string reason;  // why not served
  // An exported program (--program NAME=PATH, runtime/program.h), not an operator: `name`
  // is its NAME (no namespace), its arguments and returns are tensors with signatures, and
  // `schema` describes them.
  bool program = false;

  std::string QualifiedName() const;  // name or name.overload
};

// The compiled patterns of --ops: comma-separated "namespace::*" or "namespace::op"
// (an op name matches all its overloads) or "namespace::op.overload".
class OpPatterns {
 public:
  static absl::StatusOr<OpPatterns> Parse(absl::string_view text);
  bool Matches(absl::string_view ns_name, absl::string_view overload) const;
  const std::vector<std::string>& patterns() const { return patterns_; }

 private:
  std::vector<std::string> patterns_;
};

class OpRegistry {
 public:
  // Describes every registered operator that matches `patterns` (in op_table.cc, the
  // torch side). INVALID_ARGUMENT when a pattern names a specific op that is not
  // registered (a typo, or a library that was not loaded). Then loads `programs`
  // (runtime/program.h) for `devices`: FAILED_PRECONDITION naming the package when one
  // cannot be loaded or calls an operator that is not registered.
  static absl::StatusOr<std::shared_ptr<const OpRegistry>> Build(
      const OpPatterns& patterns, const std::vector<ProgramSpec>& programs = {},
      const ProgramPlacement& placement = {});
  // For tests: a registry of given descriptions (no torch handles; not runnable).
  explicit OpRegistry(std::vector<OpInfo> ops);

  // Sorted by name, then overload.
  const std::vector<OpInfo>& ops() const { return ops_; }

  // The index of a served op by "namespace::name" (its default overload) or
  // "namespace::name.overload". INVALID_ARGUMENT naming the op when it is not listed or
  // not served (with the reason).
  absl::StatusOr<int> Find(absl::string_view qualified_name) const;
  // ops()[index].QualifiedName(), made once (a call's metrics label it).
  const std::string& Name(int index) const { return names_[static_cast<size_t>(index)]; }

  // Opaque handles of the torch side, one per op (null in registries made for tests).
  struct Handles;
  const Handles* handles() const { return handles_.get(); }

 private:
  friend struct OpRegistryBuilder;
  std::vector<OpInfo> ops_;
  std::vector<std::string> names_;               // QualifiedName() of each op
  absl::flat_hash_map<std::string, int> index_;  // by QualifiedName(); Find is per call
  std::shared_ptr<const Handles> handles_;       // shared_ptr: Handles is incomplete here
};

// Binds a call's arguments (positional first, then by name) to `op`'s schema: fills
// call->args. INVALID_ARGUMENT naming the op and the argument for: too many positional
// arguments, an unknown or repeated name, a kwarg-only argument given by position, a
// missing required argument, or a value of the wrong kind (saying which are accepted).
// For a program, then its signature's checks (CheckProgramInputs, runtime/program.h).
absl::Status BindArguments(const OpInfo& op, std::vector<NamedValue> given, OpCall* call);

}  // namespace myops::server
