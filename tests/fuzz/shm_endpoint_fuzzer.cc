// Fuzz target: the REST binding's shared memory endpoints (frontends/oip/rest/shm.h) as a
// client reaches them: the first input byte says how many of the next bytes are the path
// after /v2/systemsharedmemory, the rest is the body. ParseSharedMemoryPath, then
// AnswerSharedMemory on a registry of at most 4 regions of at most 1 MiB in all (the
// object /myops_fuzz_endpoint exists, 64 KiB, for registrations to succeed). Beyond
// "no crash, no sanitizer report", checks: refusals have the codes the endpoints document
// (NOT_FOUND, INVALID_ARGUMENT, ALREADY_EXISTS, FAILED_PRECONDITION, RESOURCE_EXHAUSTED);
// a reply is JSON; the registry stays within its limits.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "frontends/oip/rest/shm.h"

namespace {

[[noreturn]] void Fail(const char* what) {
  fprintf(stderr, "fuzz property violated: %s\n", what);
  __builtin_trap();
}

constexpr int kMaxRegions = 4;

myops::server::SharedMemoryRegistry& Registry() {
  static auto* registry = new myops::server::SharedMemoryRegistry({kMaxRegions, 1 << 20});
  return *registry;
}

// A 64 KiB object the seeds register (removed when the fuzzer exits).
constexpr char kSeedKey[] = "/myops_fuzz_endpoint";

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const int fd = shm_open(kSeedKey, O_RDWR | O_CREAT, 0600);
  if (fd < 0 || ftruncate(fd, 64 << 10) != 0) Fail("cannot create the seed object");
  close(fd);
  atexit([] { shm_unlink(kSeedKey); });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  if (size < 1) return 0;
  const size_t path_bytes = std::min<size_t>(bytes[0], size - 1);
  const std::string path = std::string(myops::server::kserve::kSharedMemoryPath) +
                           std::string(reinterpret_cast<const char*>(bytes + 1), path_bytes);
  const absl::string_view body(reinterpret_cast<const char*>(bytes + 1 + path_bytes),
                               size - 1 - path_bytes);
  auto endpoint = myops::server::kserve::ParseSharedMemoryPath(path);
  if (!endpoint.ok()) {
    if (endpoint.status().code() != absl::StatusCode::kNotFound) Fail("the path's code");
    return 0;
  }
  auto reply = myops::server::kserve::AnswerSharedMemory(
      myops::server::OwnedRegions(&Registry(), "fuzz"), *endpoint, body);
  if (!reply.ok()) {
    switch (reply.status().code()) {
      case absl::StatusCode::kNotFound:
      case absl::StatusCode::kInvalidArgument:
      case absl::StatusCode::kAlreadyExists:
      case absl::StatusCode::kFailedPrecondition:
      case absl::StatusCode::kResourceExhausted:
        break;
      default:
        Fail("an endpoint's code");
    }
  } else if (!nlohmann::json::accept(*reply)) {
    Fail("the reply is not JSON");
  }
  auto all = Registry().Status("fuzz", "");
  if (!all.ok() || all->size() > static_cast<size_t>(kMaxRegions)) Fail("over the region limit");
  return 0;
}
