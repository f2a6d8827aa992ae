// The server-wide memory budget: every byte held for a request (its input as received,
// its output, a computed response still waiting to be written on a stream) is reserved
// here from the moment it is held until it is released, unary and streams alike.
// Admission fails (unary: RESOURCE_EXHAUSTED) when a request's bytes do not fit. Neither
// torch nor protobuf.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace myops::server {

class MemoryBudget;

// Bytes reserved from a MemoryBudget; releases them when destroyed or reset. Move-only;
// not thread-safe itself (one owner), while the budget it came from is.
class BudgetReservation {
 public:
  BudgetReservation() = default;
  BudgetReservation(BudgetReservation&& other) noexcept { *this = std::move(other); }
  BudgetReservation& operator=(BudgetReservation&& other) noexcept;
  BudgetReservation(const BudgetReservation&) = delete;
  BudgetReservation& operator=(const BudgetReservation&) = delete;
  ~BudgetReservation() { Reset(); }

  int64_t bytes() const { return bytes_; }
  void Reset();

 private:
  friend class MemoryBudget;
  BudgetReservation(MemoryBudget* budget, int64_t bytes) : budget_(budget), bytes_(bytes) {}
  MemoryBudget* budget_ = nullptr;
  int64_t bytes_ = 0;
};

// Thread-safe and lock-free. Must outlive every reservation taken from it.
class MemoryBudget {
 public:
  explicit MemoryBudget(int64_t limit_bytes) : limit_(limit_bytes) {}

  // All or nothing: false (and `out` untouched) when `bytes` more would exceed the limit.
  bool TryReserve(int64_t bytes, BudgetReservation* out);

  int64_t limit() const { return limit_; }
  int64_t held() const { return held_.load(std::memory_order_relaxed); }

 private:
  friend class BudgetReservation;
  void Release(int64_t bytes) { held_.fetch_sub(bytes, std::memory_order_acq_rel); }

  const int64_t limit_;
  std::atomic<int64_t> held_{0};
};

// The memory this process may use: the cgroup's limit (v2 memory.max, or v1
// memory.limit_in_bytes) when one is set, else the machine's physical memory.
int64_t MemoryLimitBytes();

// The default budget: half of MemoryLimitBytes(), leaving the rest to PyTorch, gRPC's
// transport buffers and the allocator.
int64_t DefaultMemoryBudgetBytes();

}  // namespace myops::server
