// BusGuard: memory ranges (shared memory mappings that clients own) where a SIGBUS does
// not kill the server. A client may shrink or unlink the file behind a region while the
// server reads or writes it; touching a mapped page past the file's new end raises
// SIGBUS. For an address inside a guarded range, the handler maps an anonymous zero page
// over the faulting page (the access then completes on private memory) and marks the
// range tripped: the call using it fails afterwards (shared_memory.h) instead of the
// process dying. A SIGBUS anywhere else gets the previous disposition (by default: the
// process dies with a core, as without the guard).
//
// Thread-safety: Guard/Release may be called from any thread; the handler reads the
// table with atomics only (async-signal-safe). At most kSlots ranges at once.
#pragma once

#include <cstddef>

#include "absl/status/statusor.h"

namespace myops::server {

class BusGuard {
 public:
  static constexpr int kSlots = 1024;

  // Guards [base, base + length): installs the handler on first use. RESOURCE_EXHAUSTED
  // when kSlots ranges are guarded already. The range must be page-aligned.
  static absl::StatusOr<int> Guard(void* base, size_t length);
  // Stops guarding `slot` (before the range is unmapped).
  static void Release(int slot);
  // Whether a SIGBUS hit `slot`'s range since Guard.
  static bool Tripped(int slot);
};

}  // namespace myops::server
