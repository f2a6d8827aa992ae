// The Open Inference Protocol's extensions as myops-server answers them, for both
// bindings (gRPC: frontends/oip/grpc/service.cc, REST: frontends/oip/rest/service.cc):
// which it lists in the server's metadata, and its answers to Triton's extensions that it
// does not implement (repository control, CUDA shared memory, trace and log settings),
// each a status that says what myops has instead. Neither torch nor protobuf.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "runtime/op_registry.h"

namespace myops::server::kserve {

// The extensions listed in the server's metadata, in this order: model_configuration,
// parameters, [binary_tensor_data for REST,] statistics, classification, model_repository
// (its index), [system_shared_memory when the server accepts shared memory].
std::vector<std::string> ServerExtensions(bool rest, bool shared_memory);

// One entry of the repository index: every served operator is a model of version "1",
// READY (the served operators are loaded at start-up and stay).
struct IndexEntry {
  std::string name, version, state;
};
std::vector<IndexEntry> RepositoryIndex(const OpRegistry& registry);

// Loading or unloading model `model`: UNAVAILABLE, as Triton answers without explicit
// model control, saying why (the served operators are fixed by the server's flags).
absl::Status RepositoryControlRefused(const std::string& model, bool load);

// Registering CUDA shared memory region `name`: INVALID_ARGUMENT (as Triton answers a
// region it cannot register), saying what to use instead.
absl::Status CudaSharedMemoryRefused(const std::string& name);

// Trace settings and log settings, read or changed: UNIMPLEMENTED, saying what myops has
// instead.
absl::Status TraceSettingsRefused();
absl::Status LogSettingsRefused();

}  // namespace myops::server::kserve
