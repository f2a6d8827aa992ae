// The torch-free half of the operator registry (see op_registry.h): names, patterns,
// lookup, and binding a call's arguments to a schema. The half that reads PyTorch's
// operator table is op_table.cc.
#include "runtime/op_registry.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "util/quote.h"

namespace myops::server {

const char* ArgKindName(ArgKind kind) {
  switch (kind) {
    case ArgKind::kTensor:
      return "Tensor";
    case ArgKind::kInt:
      return "int";
    case ArgKind::kFloat:
      return "float";
    case ArgKind::kBool:
      return "bool";
    case ArgKind::kString:
      return "str";
    case ArgKind::kIntList:
      return "int[]";
    case ArgKind::kFloatList:
      return "float[]";
    case ArgKind::kTensorList:
      return "Tensor[]";
    case ArgKind::kScalar:
      return "Scalar";
    case ArgKind::kScalarType:
      return "ScalarType";
    case ArgKind::kOther:
      break;
  }
  return "unsupported";
}

std::string OpInfo::QualifiedName() const {
  return overload.empty() ? name : absl::StrCat(name, ".", overload);
}

absl::StatusOr<OpPatterns> OpPatterns::Parse(absl::string_view text) {
  OpPatterns p;
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    part = absl::StripAsciiWhitespace(part);
    const size_t sep = part.find("::");
    const bool ok = sep != absl::string_view::npos && sep > 0 && sep + 2 < part.size() &&
                    part.find("::", sep + 2) == absl::string_view::npos &&
                    (part.substr(sep + 2) == "*" || part.find('*') == absl::string_view::npos);
    if (!ok) {
      return absl::InvalidArgumentError(
          absl::StrCat("bad operator pattern '", EchoValue(part), "'",
                       ": expected \"namespace::*\", \"namespace::op\" or "
                       "\"namespace::op.overload\", comma-separated"));
    }
    p.patterns_.emplace_back(part);
  }
  if (p.patterns_.empty()) {
    return absl::InvalidArgumentError("no operator patterns: expected e.g. \"myops::*\"");
  }
  return p;
}

bool OpPatterns::Matches(absl::string_view ns_name, absl::string_view overload) const {
  for (const std::string& p : patterns_) {
    if (absl::EndsWith(p, "::*")) {
      if (absl::StartsWith(ns_name, p.substr(0, p.size() - 1))) return true;
    } else if (p == ns_name || (!overload.empty() && p == absl::StrCat(ns_name, ".", overload))) {
      return true;
    }
  }
  return false;
}

OpRegistry::OpRegistry(std::vector<OpInfo> ops) : ops_(std::move(ops)) {
  names_.reserve(ops_.size());
  for (size_t i = 0; i < ops_.size(); ++i) {
    names_.push_back(ops_[i].QualifiedName());
    index_.emplace(names_.back(), static_cast<int>(i));
  }
}

absl::StatusOr<int> OpRegistry::Find(absl::string_view qualified_name) const {
  // "ns::op" names the default overload; "ns::op.overload" another one.
  if (auto found = index_.find(qualified_name); found != index_.end()) {
    const OpInfo& op = ops_[static_cast<size_t>(found->second)];
    if (!op.served) {
      return absl::InvalidArgumentError(absl::StrCat(
          "operator ", names_[static_cast<size_t>(found->second)], " is not served: ", op.reason));
    }
    return found->second;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown operator '", EchoValue(qualified_name),
                   "': not among the operators this server serves (ListOperators lists them; "
                   "the server's --ops and --load-library choose them)"));
}

namespace {

bool Accepts(const ArgInfo& arg, Value::Kind kind) {
  using K = Value::Kind;
  if (kind == K::kNone) return arg.optional;
  switch (arg.kind) {
    case ArgKind::kTensor:
      return kind == K::kTensor;
    case ArgKind::kInt:
      return kind == K::kInt;
    case ArgKind::kFloat:  // an int is a valid float, as in Python
      return kind == K::kFloat || kind == K::kInt;
    case ArgKind::kBool:
      return kind == K::kBool;
    case ArgKind::kString:
      return kind == K::kString;
    case ArgKind::kIntList:  // a single int broadcasts, as in torch (int[2] x=1)
      return kind == K::kIntList || kind == K::kInt;
    case ArgKind::kFloatList:
      return kind == K::kFloatList || kind == K::kIntList;
    case ArgKind::kTensorList:
      return kind == K::kTensorList;
    case ArgKind::kScalar:
      return kind == K::kInt || kind == K::kFloat || kind == K::kBool;
    case ArgKind::kScalarType:
      return kind == K::kScalarType;
    case ArgKind::kOther:
      return false;
  }
  return false;
}

const char* ValueKindName(Value::Kind kind) {
  using K = Value::Kind;
  switch (kind) {
    case K::kNone:
      return "None";
    case K::kTensor:
      return "Tensor";
    case K::kInt:
      return "int";
    case K::kFloat:
      return "float";
    case K::kBool:
      return "bool";
    case K::kString:
      return "str";
    case K::kIntList:
      return "int[]";
    case K::kFloatList:
      return "float[]";
    case K::kTensorList:
      return "Tensor[]";
    case K::kScalarType:
      return "ScalarType";
  }
  return "?";
}

int64_t TensorBytes(const Value& v) {
  int64_t n = v.kind == Value::Kind::kTensor ? v.tensor.bytes : 0;
  for (const TensorView& t : v.tensor_list) n += t.bytes;
  return n;
}

}  // namespace

absl::Status BindArguments(const OpInfo& op, std::vector<NamedValue> given, OpCall* call) {
  const size_t n = op.args.size();
  call->args.assign(n, std::nullopt);
  call->input_bytes = 0;
  size_t positional = 0, given_positional = 0;
  for (const NamedValue& v : given) given_positional += v.name.empty() ? 1 : 0;
  bool named_seen = false;
  for (NamedValue& v : given) {
    size_t index = n;
    if (v.name.empty()) {
      if (named_seen) {
        return absl::InvalidArgumentError(
            absl::StrCat(op.QualifiedName(), "(): a positional argument follows a named one"));
      }
      if (index = positional++; index >= n || op.args[index].kwarg_only) {
        size_t max_positional = 0;
        while (max_positional < n && !op.args[max_positional].kwarg_only) ++max_positional;
        return absl::InvalidArgumentError(
            absl::StrCat(op.QualifiedName(), "() takes ", max_positional, " positional argument",
                         max_positional == 1 ? "" : "s", " but ", given_positional,
                         " were given (schema: ", op.schema, ")"));
      }
    } else {
      named_seen = true;
      for (size_t i = 0; i < n; ++i) {
        if (op.args[i].name == v.name) index = i;
      }
      if (index == n) {
        return absl::InvalidArgumentError(
            absl::StrCat(op.QualifiedName(), "() got an unexpected keyword argument '",
                         EchoValue(v.name), "' (schema: ", op.schema, ")"));
      }
      if (call->args[index].has_value()) {
        return absl::InvalidArgumentError(
            absl::StrCat(op.QualifiedName(), "() got multiple values for argument '", v.name, "'"));
      }
    }
    const ArgInfo& arg = op.args[index];
    if (!Accepts(arg, v.value.kind)) {
      return absl::InvalidArgumentError(
          absl::StrCat(op.QualifiedName(), "(): argument '", arg.name, "' (position ", index + 1,
                       ") must be ", arg.type, ", not ", ValueKindName(v.value.kind)));
    }
    call->input_bytes += TensorBytes(v.value);
    call->args[index] = std::move(v.value);
  }
  for (size_t i = 0; i < n; ++i) {
    if (!call->args[i].has_value() && !op.args[i].has_default) {
      return absl::InvalidArgumentError(
          absl::StrCat(op.QualifiedName(), "() is missing required argument '", op.args[i].name,
                       "' (", op.args[i].type, "; schema: ", op.schema, ")"));
    }
  }
  // A program's tensors must fit what its compiled code accepts, checked here, before
  // admission and the executor, on every front end.
  if (op.program) return CheckProgramInputs(op, *call);
  return absl::OkStatus();
}

}  // namespace myops::server
