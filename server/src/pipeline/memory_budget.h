// The server-wide memory budget: every byte held for a request (its input as received,
// its output, a computed response still waiting to be written on a stream) is reserved
// here from the moment it is held until it is released, unary and streams alike.
// Admission fails (unary: RESOURCE_EXHAUSTED) when a request's bytes do not fit. Each
// client's reservations also count against its account, bounded by its share of the
// budget, so that no client can hold it all. Neither torch nor protobuf.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

namespace myops::server {

class MemoryBudget;

// What one client (a tenant where tokens are set, else a connection: Pipeline::AccountOf)
// holds of a budget, at most limit() bytes. Shared by the client's calls and their
// reservations, which keep it alive; thread-safe and lock-free.
class ClientAccount {
 public:
  ClientAccount(std::string name, int64_t limit) : name_(std::move(name)), limit_(limit) {}
  const std::string& name() const { return name_; }
  int64_t limit() const { return limit_; }
  int64_t held() const { return held_.load(std::memory_order_relaxed); }

 private:
  friend class MemoryBudget;
  friend class BudgetReservation;
  const std::string name_;
  const int64_t limit_;
  std::atomic<int64_t> held_{0};
};

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
  // Forgets its bytes without releasing them: they stay held until MemoryBudget::Give
  // returns them (memory whose owner is not a reservation: pipeline.cc's call charge).
  void Keep();

 private:
  friend class MemoryBudget;
  BudgetReservation(MemoryBudget* budget, int64_t bytes, std::shared_ptr<ClientAccount> account)
      : budget_(budget), bytes_(bytes), account_(std::move(account)) {}
  MemoryBudget* budget_ = nullptr;
  int64_t bytes_ = 0;
  std::shared_ptr<ClientAccount> account_;  // null: counted against no client
};

// Thread-safe and lock-free. Must outlive every reservation taken from it.
class MemoryBudget {
 public:
  explicit MemoryBudget(int64_t limit_bytes) : limit_(limit_bytes) {}

  // All or nothing: false (and `out` untouched) when `bytes` more would exceed the limit,
  // or `account`'s (when given; the reservation keeps it).
  bool TryReserve(int64_t bytes, BudgetReservation* out,
                  std::shared_ptr<ClientAccount> account = nullptr);

  int64_t limit() const { return limit_; }
  int64_t held() const { return held_.load(std::memory_order_relaxed); }
  // Returns `bytes` a kept reservation held (BudgetReservation::Keep), to the budget and
  // to `account` (null: none; the account it was reserved with).
  void Give(int64_t bytes, ClientAccount* account);

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
