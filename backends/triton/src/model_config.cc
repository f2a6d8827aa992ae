// Reading and completing a myops model's configuration (model_config.h).
#include "model_config.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace myops::triton {
namespace {

// parameters[key].string_value, "" when absent.
absl::StatusOr<std::string> StringParameter(const nlohmann::json& config, const std::string& model,
                                            const char* key) {
  auto params = config.find("parameters");
  if (params == config.end() || !params->is_object()) return std::string();
  auto p = params->find(key);
  if (p == params->end()) return std::string();
  auto value = p->is_object() ? p->find("string_value") : p->end();
  if (!p->is_object() || value == p->end() || !value->is_string()) {
    return absl::InvalidArgumentError(
        absl::StrCat("model '", model, "': parameter '", key, "' must have a string_value"));
  }
  return value->get<std::string>();
}

std::string TritonType(const char* datatype) {
  const std::string d = datatype;
  return d == "BYTES" ? "TYPE_STRING" : "TYPE_" + d;
}

}  // namespace

absl::StatusOr<ModelConfig> ParseModelConfig(const nlohmann::json& config) {
  ModelConfig out;
  if (auto name = config.find("name"); name != config.end() && name->is_string()) {
    out.name = name->get<std::string>();
  }
  auto op = StringParameter(config, out.name, "op");
  if (!op.ok()) return op.status();
  out.op = std::string(absl::StripAsciiWhitespace(*op));
  auto program = StringParameter(config, out.name, "program");
  if (!program.ok()) return program.status();
  out.program = std::string(absl::StripAsciiWhitespace(*program));
  if (out.op.empty() == out.program.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("model '", out.name, "': the myops backend needs ",
                     out.op.empty() ? "the operator to serve" : "one of the two, not both",
                     ": parameters { key: \"op\" value { string_value: \"namespace::name\" } }, or "
                     "an exported program: parameters { key: \"program\" value { string_value: "
                     "\"/path/model.pt2\" } }"));
  }
  auto libraries = StringParameter(config, out.name, "libraries");
  if (!libraries.ok()) return libraries.status();
  // Comma-separated paths; an empty item (",,", a comma at either end) is a mistake in the
  // list, not a library fewer.
  if (!absl::StripAsciiWhitespace(*libraries).empty()) {
    for (absl::string_view path : absl::StrSplit(*libraries, ',')) {
      path = absl::StripAsciiWhitespace(path);
      if (path.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("model '", out.name, "': parameter 'libraries' has an empty item in \"",
                         *libraries, "\": expected library paths separated by commas"));
      }
      out.libraries.emplace_back(path);
    }
  }
  auto libpython = StringParameter(config, out.name, "libpython");
  if (!libpython.ok()) return libpython.status();
  out.libpython = *libpython;
  if (auto mbs = config.find("max_batch_size"); mbs != config.end() && mbs->is_number_integer()) {
    out.max_batch_size = mbs->get<int64_t>();
  }
  if (auto groups = config.find("instance_group"); groups != config.end() && groups->is_array()) {
    for (const nlohmann::json& g : *groups) {
      if (!g.is_object() || g.value("kind", std::string("KIND_CPU")) != "KIND_CPU") continue;
      auto count = g.find("count");
      out.instances += count != g.end() && count->is_number_integer()
                           ? static_cast<int>(std::clamp<int64_t>(count->get<int64_t>(), 0, 1024))
                           : 1;
    }
  }
  return out;
}

bool AutoCompleteConfig(const server::kserve::ModelSpec& spec, nlohmann::json* config) {
  bool changed = false;
  // Entries of `key` missing from `config` (by name) are added; listed entries stay as
  // written: their dims (Triton checks a request's rank against them) and datatypes are
  // the user's.
  auto complete = [&](const char* key, const std::vector<server::kserve::TensorSpec>& specs,
                      bool inputs) {
    nlohmann::json& list = (*config)[key];
    if (!list.is_array()) list = nlohmann::json::array();
    for (const server::kserve::TensorSpec& t : specs) {
      auto listed = std::find_if(list.begin(), list.end(), [&](const nlohmann::json& e) {
        return e.is_object() && e.value("name", "") == t.name;
      });
      if (listed != list.end()) continue;
      nlohmann::json entry = {
          {"name", t.name}, {"data_type", TritonType(t.datatype)}, {"dims", t.shape}};
      if (inputs) entry["optional"] = t.optional || !t.tensor;
      list.push_back(std::move(entry));
      changed = true;
    }
  };
  complete("input", spec.inputs, true);
  complete("output", spec.outputs, false);
  return changed;
}

}  // namespace myops::triton
