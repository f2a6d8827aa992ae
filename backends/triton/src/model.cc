// A served model: configuration, libraries, operator (model.h).
#include "model.h"

#include <algorithm>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "errors.h"
#include "frontends/oip/args.h"
#include "runtime/library_loader.h"

namespace myops::triton {
namespace {

// Loading libraries and reading PyTorch's operator table are start-up work in the
// runtime (not thread-safe); Triton may load several models at once.
std::mutex load_mutex;

absl::StatusOr<nlohmann::json> ConfigJson(TRITONBACKEND_Model* model) {
  TRITONSERVER_Message* message = nullptr;
  if (absl::Status s = TakeTritonError(TRITONBACKEND_ModelConfig(model, 1, &message)); !s.ok()) {
    return s;
  }
  const char* base = nullptr;
  size_t size = 0;
  absl::Status s = TakeTritonError(TRITONSERVER_MessageSerializeToJson(message, &base, &size));
  nlohmann::json config;
  if (s.ok()) {
    config = nlohmann::json::parse(base, base + size, nullptr, /*allow_exceptions=*/false);
  }
  TakeTritonError(TRITONSERVER_MessageDelete(message)).IgnoreError();
  if (!s.ok()) return s;
  if (config.is_discarded() || !config.is_object()) {
    return absl::InternalError("Triton's model configuration is not a JSON object");
  }
  return config;
}

absl::Status SetConfig(TRITONBACKEND_Model* model, const nlohmann::json& config) {
  const std::string text = config.dump();
  TRITONSERVER_Message* message = nullptr;
  if (absl::Status s = TakeTritonError(
          TRITONSERVER_MessageNewFromSerializedJson(&message, text.data(), text.size()));
      !s.ok()) {
    return s;
  }
  absl::Status s = TakeTritonError(TRITONBACKEND_ModelSetConfig(model, 1, message));
  TakeTritonError(TRITONSERVER_MessageDelete(message)).IgnoreError();
  return s;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Model>> Model::Create(TRITONBACKEND_Model* triton_model) {
  auto json = ConfigJson(triton_model);
  if (!json.ok()) return json.status();
  auto config = ParseModelConfig(*json);
  if (!config.ok()) return config.status();
  auto model = std::unique_ptr<Model>(new Model);
  model->config_ = *std::move(config);
  const std::string& name = model->config_.name;
  {
    std::lock_guard<std::mutex> lock(load_mutex);
    if (absl::Status s =
            server::LoadOperatorLibraries(model->config_.libraries, model->config_.libpython);
        !s.ok()) {
      return absl::Status(s.code(), absl::StrCat("model '", name, "': ", s.message()));
    }
    server::OpPatterns patterns;  // none for a program
    if (model->config_.program.empty()) {
      auto parsed = server::OpPatterns::Parse(model->config_.op);
      if (!parsed.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("model '", name, "': parameter 'op': ", parsed.status().message()));
      }
      patterns = *std::move(parsed);
    }
    // A program is loaded for the CPU, with a model instance per CPU instance of the
    // model (instances run calls side by side).
    std::vector<server::ProgramSpec> programs;
    if (!model->config_.program.empty()) programs.push_back({name, model->config_.program});
    auto registry = server::OpRegistry::Build(
        patterns, programs, {{server::Device{}}, std::max(1, model->config_.instances)});
    if (!registry.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("model '", name, "': ", registry.status().message()));
    }
    model->registry_ = *std::move(registry);
  }
  auto op = model->registry_->Find(model->config_.program.empty() ? model->config_.op : name);
  if (!op.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("model '", name, "': ", op.status().message()));
  }
  model->op_ = *op;
  model->output_names_ = server::kserve::OutputNames(model->op_info());
  auto all = server::kserve::SelectOutputs(model->op_info(), {});
  if (!all.ok()) return all.status();
  model->all_outputs_ = *std::move(all);

  bool auto_complete = false;
  if (absl::Status s =
          TakeTritonError(TRITONBACKEND_ModelAutoCompleteConfig(triton_model, &auto_complete));
      !s.ok()) {
    return s;
  }
  if (auto_complete && AutoCompleteConfig(server::kserve::DescribeOp(model->op_info()), &*json)) {
    if (absl::Status s = SetConfig(triton_model, *json); !s.ok()) {
      return absl::Status(s.code(), absl::StrCat("model '", name,
                                                 "': completing its configuration: ", s.message()));
    }
  }
  Log(TRITONSERVER_LOG_INFO,
      absl::StrCat("myops: model '", name, "' serves ", model->op_info().schema));
  return model;
}

}  // namespace myops::triton
