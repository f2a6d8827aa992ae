// The HTTP/REST binding of Triton's system shared memory extension (frontends/oip/shm.h has
// the request path's rules): the endpoints
//   GET  /v2/systemsharedmemory[/region/{name}]/status   [{"name","key","offset","byte_size"}]
//   POST /v2/systemsharedmemory/region/{name}/register   {"key","offset","byte_size"}
//   POST /v2/systemsharedmemory[/region/{name}]/unregister
// and the resolution of a parsed inference request's region references (inputs and
// outputs with shared_memory_* parameters). No civetweb here: frontends/oip/rest/service.cc reads
// the body and writes the reply.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "frontends/oip/rest/json.h"
#include "frontends/oip/shm.h"

namespace myops::server::kserve {

inline constexpr char kSharedMemoryPath[] = "/v2/systemsharedmemory";
// A registration body is three short fields; the bound also bounds JSON nesting.
inline constexpr int64_t kMaxSharedMemoryBodyBytes = 4096;

// One of the endpoints: what it does, to which region (none: every region), and the
// method it takes.
struct SharedMemoryEndpoint {
  enum class Action { kStatus, kRegister, kUnregister };
  Action action = Action::kStatus;
  std::optional<std::string> region;
  const char* method() const { return action == Action::kStatus ? "GET" : "POST"; }
};

// The endpoint `path` (under kSharedMemoryPath) is; NOT_FOUND when it is none.
absl::StatusOr<SharedMemoryEndpoint> ParseSharedMemoryPath(absl::string_view path);

// The JSON reply of `endpoint` with request body `body`, for the caller whose regions are
// `shm` (no registry: shared memory off, UNIMPLEMENTED); the registry's errors, and
// INVALID_ARGUMENT for a registration body that is not {"key": string, "offset": uint
// (optional), "byte_size": uint}.
absl::StatusOr<std::string> AnswerSharedMemory(const OwnedRegions& shm,
                                               const SharedMemoryEndpoint& endpoint,
                                               absl::string_view body);

}  // namespace myops::server::kserve
