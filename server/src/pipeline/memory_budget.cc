// The server-wide memory budget (see pipeline/memory_budget.h).
#include "pipeline/memory_budget.h"

#include <unistd.h>

#include <fstream>
#include <limits>

namespace myops::server {
namespace {

// The number in the first line of `path`; -1 when it is absent, unreadable or "max".
int64_t ReadLimit(const char* path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text == "max") return -1;
  try {
    const long long value = std::stoll(text);
    return value > 0 ? static_cast<int64_t>(value) : -1;
  } catch (...) {
    return -1;
  }
}

}  // namespace

BudgetReservation& BudgetReservation::operator=(BudgetReservation&& other) noexcept {
  if (this != &other) {
    Reset();
    budget_ = other.budget_;
    bytes_ = other.bytes_;
    other.budget_ = nullptr;
    other.bytes_ = 0;
  }
  return *this;
}

void BudgetReservation::Reset() {
  if (budget_ != nullptr && bytes_ > 0) budget_->Release(bytes_);
  budget_ = nullptr;
  bytes_ = 0;
}

bool MemoryBudget::TryReserve(int64_t bytes, BudgetReservation* out) {
  if (bytes < 0) return false;
  int64_t held = held_.load(std::memory_order_relaxed);
  do {
    if (bytes > limit_ - held) return false;
  } while (!held_.compare_exchange_weak(held, held + bytes, std::memory_order_acq_rel));
  *out = BudgetReservation(this, bytes);
  return true;
}

int64_t MemoryLimitBytes() {
  const int64_t physical = static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE);
  int64_t limit = physical > 0 ? physical : int64_t{4} << 30;
  for (const char* path :
       {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    const int64_t cgroup = ReadLimit(path);
    // cgroup v1 reports "no limit" as a huge number: only a smaller one is a limit.
    if (cgroup > 0 && cgroup < limit) limit = cgroup;
  }
  return limit;
}

int64_t DefaultMemoryBudgetBytes() { return MemoryLimitBytes() / 2; }

}  // namespace myops::server
