// How many bytes the process's allocations hold now: what a leak grows, unlike RSS, which
// also counts what the allocator keeps cached for reuse. Neither torch nor protobuf.
#pragma once

#include <cstdint>
#include <optional>

namespace myops::server {

// tcmalloc's generic.current_allocated_bytes where tcmalloc is the allocator (linked or
// preloaded), else glibc's mallinfo2 (in-use chunks and mmapped blocks); nullopt where
// neither tells (a sanitizer's allocator). Thread-safe; costs a lock of the allocator's.
std::optional<int64_t> HeapInUseBytes();

}  // namespace myops::server
