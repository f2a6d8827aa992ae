// The torch-free half of exported programs (see program.h): the --program flag, the
// package's signature metadata, and the checks of a call's inputs against it.
#include "runtime/program.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/op_registry.h"
#include "runtime/value.h"

namespace myops::server {

std::string TensorSignature::ToString() const {
  std::vector<std::string> parts;
  for (const Dim& d : dims) {
    if (d.is_static()) {
      parts.push_back(absl::StrCat(d.min));
    } else if (d.min == 0 && d.max < 0) {
      parts.push_back("-1");  // any size
    } else {
      parts.push_back(absl::StrCat(d.min, "..", d.max < 0 ? std::string("") : absl::StrCat(d.max)));
    }
  }
  return absl::StrCat(DTypeName(dtype), "[", absl::StrJoin(parts, ", "), "]");
}

absl::StatusOr<ProgramSpec> ParseProgramSpec(absl::string_view text) {
  const size_t eq = text.find('=');
  if (eq == absl::string_view::npos || eq == 0 || eq + 1 == text.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--program '", text, "': expected NAME=PATH (PATH a .pt2 package)"));
  }
  ProgramSpec spec{std::string(text.substr(0, eq)), std::string(text.substr(eq + 1))};
  const bool valid_chars = std::all_of(spec.name.begin(), spec.name.end(), [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
  });
  if (!valid_chars || spec.name.size() > 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("--program '", text, "': NAME must be 1-64 letters, digits, '_' or '-'"));
  }
  return spec;
}

namespace {

using Json = nlohmann::json;

absl::StatusOr<ProgramSignature::Tensor> ParseTensor(const Json& j, const std::string& where,
                                                     bool input) {
  if (!j.is_object() || !j.contains("name") || !j["name"].is_string() || !j.contains("dtype") ||
      !j["dtype"].is_string() || !j.contains("shape") || !j["shape"].is_array()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": expected {\"name\": str, \"dtype\": str, \"shape\": [...]}"));
  }
  ProgramSignature::Tensor t;
  t.name = j["name"].get<std::string>();
  if (t.name.empty()) return absl::InvalidArgumentError(absl::StrCat(where, ": empty name"));
  const std::string dtype = j["dtype"].get<std::string>();
  const std::optional<DType> parsed = DTypeFromName(dtype);
  if (!parsed.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat(where, " ('", t.name, "'): dtype '", dtype,
                                                   "' is not one of ", DTypeNameList()));
  }
  t.signature.dtype = *parsed;
  for (const Json& d : j["shape"]) {
    TensorSignature::Dim dim;
    if (d.is_number_integer()) {
      const int64_t size = d.get<int64_t>();
      if (size < -1 || (size == -1 && input)) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, " ('", t.name, "'): size ", size, " (inputs give ranges)"));
      }
      dim.min = size < 0 ? 0 : size;
      dim.max = size;
    } else if (d.is_object() && d.contains("min") && d["min"].is_number_integer()) {
      dim.min = d["min"].get<int64_t>();
      dim.max = d.contains("max") && d["max"].is_number_integer() ? d["max"].get<int64_t>() : -1;
      if (d.contains("symbol") && d["symbol"].is_string()) dim.symbol = d["symbol"];
      if (dim.min < 0 || (dim.max >= 0 && dim.max < dim.min)) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, " ('", t.name, "'): range ", dim.min, "..", dim.max));
      }
      if (dim.min == dim.max) dim.symbol.clear();
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          where, " ('", t.name, "'): a dimension is a size or {\"min\", \"max\", \"symbol\"}"));
    }
    t.signature.dims.push_back(std::move(dim));
  }
  return t;
}

}  // namespace

absl::StatusOr<ProgramSignature> ParseProgramSignature(absl::string_view json) {
  const Json j = Json::parse(json.begin(), json.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("inputs") || !j["inputs"].is_array() ||
      !j.contains("outputs") || !j["outputs"].is_array()) {
    return absl::InvalidArgumentError(
        "expected a JSON object with \"inputs\" and \"outputs\" arrays");
  }
  ProgramSignature out;
  for (size_t i = 0; i < j["inputs"].size(); ++i) {
    auto t = ParseTensor(j["inputs"][i], absl::StrCat("inputs[", i, "]"), /*input=*/true);
    if (!t.ok()) return t.status();
    out.inputs.push_back(*std::move(t));
  }
  for (size_t i = 0; i < j["outputs"].size(); ++i) {
    auto t = ParseTensor(j["outputs"][i], absl::StrCat("outputs[", i, "]"), /*input=*/false);
    if (!t.ok()) return t.status();
    out.outputs.push_back(*std::move(t));
  }
  if (j.contains("ops")) {
    if (!j["ops"].is_array()) return absl::InvalidArgumentError("\"ops\" must be an array");
    for (const Json& op : j["ops"]) {
      if (!op.is_string()) return absl::InvalidArgumentError("\"ops\" must hold strings");
      out.ops.push_back(op.get<std::string>());
    }
  }
  return out;
}

absl::Status CheckProgramInputs(const OpInfo& program, const OpCall& call) {
  // The size each symbol took in this call, and which input gave it.
  absl::flat_hash_map<absl::string_view, std::pair<int64_t, size_t>> symbols;
  for (size_t i = 0; i < program.args.size(); ++i) {
    const ArgInfo& arg = program.args[i];
    const TensorSignature& sig = *arg.signature;
    const TensorView& t = call.args[i]->tensor;  // bound: every argument is a given tensor
    auto wrong = [&](const std::string& what) {
      return absl::InvalidArgumentError(absl::StrCat(
          "program ", program.name, ": input '", arg.name, "' ", what, "; it takes ",
          sig.ToString(), " (got ", DTypeName(t.dtype), "[", absl::StrJoin(t.shape, ", "), "])"));
    };
    if (t.dtype != sig.dtype) return wrong(absl::StrCat("has dtype ", DTypeName(t.dtype)));
    if (t.shape.size() != sig.dims.size()) {
      return wrong(absl::StrCat("has ", t.shape.size(), " dimensions, not ", sig.dims.size()));
    }
    for (size_t d = 0; d < sig.dims.size(); ++d) {
      const TensorSignature::Dim& dim = sig.dims[d];
      const int64_t size = t.shape[d];
      if (size < dim.min || (dim.max >= 0 && size > dim.max)) {
        return wrong(absl::StrCat("has size ", size, " in dimension ", d));
      }
      if (dim.symbol.empty()) continue;
      auto [it, first] = symbols.try_emplace(dim.symbol, size, i);
      if (!first && it->second.first != size) {
        return wrong(absl::StrCat("has size ", size, " in dimension ", d, ", where input '",
                                  program.args[it->second.second].name, "' has ", it->second.first,
                                  " (the export made them one size, ", dim.symbol, ")"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace myops::server
