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
    account_ = std::move(other.account_);
    other.budget_ = nullptr;
    other.bytes_ = 0;
  }
  return *this;
}

void BudgetReservation::Reset() {
  if (budget_ != nullptr && bytes_ > 0) {
    budget_->Release(bytes_);
    if (account_ != nullptr) account_->held_.fetch_sub(bytes_, std::memory_order_acq_rel);
  }
  budget_ = nullptr;
  bytes_ = 0;
  account_.reset();
}

void BudgetReservation::Keep() {
  budget_ = nullptr;
  bytes_ = 0;
  account_.reset();
}

void MemoryBudget::Give(int64_t bytes, ClientAccount* account) {
  Release(bytes);
  if (account != nullptr) account->held_.fetch_sub(bytes, std::memory_order_acq_rel);
}

namespace {

// Adds `bytes` to `held` unless that passes `limit`.
bool TryAdd(std::atomic<int64_t>* held, int64_t limit, int64_t bytes) {
  int64_t now = held->load(std::memory_order_relaxed);
  do {
    if (bytes > limit - now) return false;
  } while (!held->compare_exchange_weak(now, now + bytes, std::memory_order_acq_rel));
  return true;
}

}  // namespace

bool MemoryBudget::TryReserve(int64_t bytes, BudgetReservation* out,
                              std::shared_ptr<ClientAccount> account) {
  if (bytes < 0) return false;
  if (account != nullptr && !TryAdd(&account->held_, account->limit_, bytes)) return false;
  if (!TryAdd(&held_, limit_, bytes)) {
    if (account != nullptr) account->held_.fetch_sub(bytes, std::memory_order_acq_rel);
    return false;
  }
  *out = BudgetReservation(this, bytes, std::move(account));
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
