// Loading AOTInductor packages and running them (see program_package.h).
#include "runtime/torch/program_package.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>

#include <exception>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/exception_status.h"
#include "runtime/regular_file.h"

namespace myops::server {
namespace {

// The metadata key myops.export.package writes the signature under (program.h).
constexpr char kSignatureKey[] = "myops.signature";

// Whether "ns::op" or "ns::op.overload" is in the operator table.
bool Registered(const std::string& qualified) {
  const size_t ns = qualified.find("::");
  const size_t dot = qualified.find('.', ns == std::string::npos ? 0 : ns);
  c10::OperatorName name(qualified.substr(0, dot),
                         dot == std::string::npos ? "" : qualified.substr(dot + 1));
  return c10::Dispatcher::singleton().findSchema(name).has_value();
}

ArgInfo Describe(const ProgramSignature::Tensor& t) {
  ArgInfo info;
  info.name = t.name;
  info.type = "Tensor";
  info.kind = ArgKind::kTensor;
  info.signature = t.signature;
  return info;
}

}  // namespace

ProgramPackage::~ProgramPackage() = default;

absl::StatusOr<std::shared_ptr<const ProgramPackage>> ProgramPackage::Load(
    const ProgramSpec& spec, const ProgramPlacement& placement) {
  const std::string where = absl::StrCat("program ", spec.name, " (", spec.path, ")");
  auto failed = [&where](const std::string& why) {
    return absl::FailedPreconditionError(absl::StrCat(where, ": ", why));
  };
  if (absl::Status file = CheckRegularFile(spec.path); !file.ok()) {
    return failed(absl::StrCat("not a readable AOTInductor package: ", file.message()));
  }
  std::unordered_map<std::string, std::string> metadata;
  try {
    metadata =
        torch::inductor::AOTIModelPackageLoader::load_metadata_from_package(spec.path, "model");
  } catch (...) {
    return failed(absl::StrCat("not a readable AOTInductor package: ",
                               StatusFromException(std::current_exception()).message()));
  }
  auto found = metadata.find(kSignatureKey);
  if (found == metadata.end()) {
    return failed(absl::StrCat(
        "the package has no \"", kSignatureKey,
        "\" metadata (the dtypes and shapes each call is checked against): package the "
        "exported program with myops.export.package (scripts/export_program.py shows how)"));
  }
  auto signature = ParseProgramSignature(found->second);
  if (!signature.ok()) {
    return failed(
        absl::StrCat("its \"", kSignatureKey, "\" metadata: ", signature.status().message()));
  }
  for (const std::string& op : signature->ops) {
    if (!Registered(op)) {
      return failed(absl::StrCat("it calls the operator ", op,
                                 ", which is not registered (load its library with "
                                 "--load-library PATH)"));
    }
  }
  auto device_key = metadata.find("AOTI_DEVICE_KEY");
  const std::string kind = device_key == metadata.end() ? "cpu" : device_key->second;
  if (kind != "cpu" && kind != "cuda") {
    return failed(absl::StrCat("it was compiled for '", kind, "', which myops does not serve"));
  }
  const DeviceKind wanted = kind == "cpu" ? DeviceKind::kCpu : DeviceKind::kCuda;
  std::shared_ptr<ProgramPackage> package(new ProgramPackage());
  for (const Device& d : placement.devices) {
    if (d.kind != wanted) continue;
    const int index = d.kind == DeviceKind::kCpu ? -1 : d.index;
    try {
      package->loaders_[index] = std::make_unique<torch::inductor::AOTIModelPackageLoader>(
          spec.path, "model", /*run_single_threaded=*/false,
          static_cast<size_t>(std::max(1, placement.runners)),
          static_cast<c10::DeviceIndex>(index));
    } catch (...) {
      return failed(absl::StrCat("could not load it for ", d.Name(), ": ",
                                 StatusFromException(std::current_exception()).message()));
    }
  }
  if (package->loaders_.empty()) {
    return failed(absl::StrCat("it was compiled for ", kind,
                               " and this server runs no such device (--devices)"));
  }
  OpInfo& info = package->info_;
  info.name = spec.name;
  info.program = true;
  std::vector<std::string> args, returns;
  for (const auto& t : signature->inputs) {
    info.args.push_back(Describe(t));
    args.push_back(absl::StrCat(t.signature.ToString(), " ", t.name));
  }
  for (const auto& t : signature->outputs) {
    info.returns.push_back(Describe(t));
    returns.push_back(absl::StrCat(t.signature.ToString(), " ", t.name));
  }
  info.schema = absl::StrCat("program ", spec.name, "(", absl::StrJoin(args, ", "), ") -> (",
                             absl::StrJoin(returns, ", "), ")");
  info.cpu = wanted == DeviceKind::kCpu;
  info.cuda = wanted == DeviceKind::kCuda;
  info.served = true;
  return std::shared_ptr<const ProgramPackage>(std::move(package));
}

std::vector<at::Tensor> ProgramPackage::Run(std::vector<at::Tensor> inputs,
                                            c10::Device device) const {
  auto loader = loaders_.find(device.is_cpu() ? -1 : device.index());
  TORCH_CHECK(loader != loaders_.end(), "the program was not loaded for ", device);
  void* stream = nullptr;
  if (device.is_cuda()) {
    stream = c10::impl::VirtualGuardImpl(c10::kCUDA).getStream(device).native_handle();
  }
  return loader->second->boxed_run(std::move(inputs), stream);
}

}  // namespace myops::server
