// The OIP extensions' answers shared by both bindings (extensions.h).
#include "frontends/oip/extensions.h"

#include "absl/strings/str_cat.h"
#include "frontends/oip/args.h"

namespace myops::server::kserve {

std::vector<std::string> ServerExtensions(bool rest, bool shared_memory) {
  std::vector<std::string> out = {"model_configuration", "parameters"};
  if (rest) out.push_back("binary_tensor_data");
  out.insert(out.end(), {"statistics", "classification", "model_repository"});
  if (shared_memory) out.push_back("system_shared_memory");
  return out;
}

std::vector<IndexEntry> RepositoryIndex(const OpRegistry& registry) {
  std::vector<IndexEntry> out;
  for (size_t i = 0; i < registry.ops().size(); ++i) {
    if (!registry.ops()[i].served) continue;
    out.push_back({registry.Name(static_cast<int>(i)), kModelVersion, "READY"});
  }
  return out;
}

absl::Status RepositoryControlRefused(const std::string& model, bool load) {
  return absl::UnavailableError(
      absl::StrCat("explicit model ", load ? "load" : "unload", " of '", model,
                   "' is not allowed: myops-server serves the operators its flags name (--ops, "
                   "--load-library), loaded at start-up"));
}

absl::Status CudaSharedMemoryRefused(const std::string& name) {
  return absl::InvalidArgumentError(
      absl::StrCat("failed to register CUDA shared memory region '", name,
                   "': myops-server does not accept CUDA shared memory; use system shared memory "
                   "(--allow-shared-memory)"));
}

absl::Status TraceSettingsRefused() {
  return absl::UnimplementedError(
      "trace settings: myops-server does not trace requests; each response's timing and the "
      "Prometheus metrics (--metrics-address) show where the time goes");
}

absl::Status LogSettingsRefused() {
  return absl::UnimplementedError(
      "log settings cannot change while myops-server runs: start it with --log-level");
}

}  // namespace myops::server::kserve
