// Fuzz support: a shared memory registry with one region "r" of kFuzzRegionBytes (its
// owner's view), as the
// fuzz targets of request paths that read tensors from regions use it. The region's
// object is unlinked at once (the mapping keeps it), so nothing is left behind.
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <string>

#include "shm/shared_memory.h"
#include "slices.h"

namespace myops::fuzz {

inline constexpr uint64_t kFuzzRegionBytes = 64 << 10;

// The regions of the owner "fuzz" (whose region "r" is).
inline server::OwnedRegions RegionsWithRegion() {
  static server::SharedMemoryRegistry* registry = [] {
    auto* r = new server::SharedMemoryRegistry(server::SharedMemoryLimits{});
    const std::string key = "/myops_fuzz_" + std::to_string(getpid());
    const int fd = shm_open(key.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0 || ftruncate(fd, kFuzzRegionBytes) != 0) Fail("cannot create the region");
    close(fd);
    if (!r->Register("fuzz", "r", key, 0, kFuzzRegionBytes).ok()) {
      Fail("cannot register the region");
    }
    shm_unlink(key.c_str());
    return r;
  }();
  return server::OwnedRegions(registry, "fuzz");
}

}  // namespace myops::fuzz
