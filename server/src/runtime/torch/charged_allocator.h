// torch's CPU allocator, wrapped so that what an operator call allocates on the CPU
// while it runs is charged to the call (OpCall::memory, a MemoryCharge): each allocation
// is taken from the charge before the memory is (a refusal throws CallRefused: the op ends
// with that status and the memory is never taken) and given back when it is freed, on
// whichever thread frees it, after the call too (results). Allocations outside a scope,
// and on threads without one (an op's intra-op pool), are not charged. Torch side.
#pragma once

#include <memory>

#include "runtime/value.h"

namespace myops::server {

// While it lives, this thread's CPU allocations are charged to `charge` (null: none).
// The first scope with a charge installs the wrapper as torch's CPU allocator (for the
// process's life). Scopes nest; not movable.
class ChargeScope {
 public:
  explicit ChargeScope(const std::shared_ptr<MemoryCharge>& charge);
  ~ChargeScope();
  ChargeScope(const ChargeScope&) = delete;
  ChargeScope& operator=(const ChargeScope&) = delete;

 private:
  const std::shared_ptr<MemoryCharge>* previous_;
};

}  // namespace myops::server
