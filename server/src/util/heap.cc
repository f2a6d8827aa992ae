// The process's heap in use (see util/heap.h).
#include "util/heap.h"

#include <dlfcn.h>
#include <malloc.h>

#include <cstddef>

namespace myops::server {
namespace {

// gperftools' C API (gperftools/malloc_extension_c.h), looked up at run time so that the
// same code serves a tcmalloc build, a preloaded tcmalloc and the system allocator.
using GetNumericProperty = int (*)(const char* property, size_t* value);

GetNumericProperty TcmallocProperty() {
  static const auto found = reinterpret_cast<GetNumericProperty>(
      dlsym(RTLD_DEFAULT, "MallocExtension_GetNumericProperty"));
  return found;
}

}  // namespace

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define MYOPS_SANITIZER_ALLOCATOR 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define MYOPS_SANITIZER_ALLOCATOR 1
#endif

std::optional<int64_t> HeapInUseBytes() {
#ifdef MYOPS_SANITIZER_ALLOCATOR
  return std::nullopt;  // The sanitizer's allocator: neither count below sees it.
#endif
  if (GetNumericProperty get = TcmallocProperty(); get != nullptr) {
    size_t bytes = 0;
    if (get("generic.current_allocated_bytes", &bytes) != 0 && bytes > 0) {
      return static_cast<int64_t>(bytes);
    }
    return std::nullopt;
  }
  const struct mallinfo2 info = mallinfo2();
  const size_t bytes = info.uordblks + info.hblkhd;
  // A process always holds some heap: 0 is an allocator that does not count (ASan's).
  if (bytes == 0) return std::nullopt;
  return static_cast<int64_t>(bytes);
}

}  // namespace myops::server
