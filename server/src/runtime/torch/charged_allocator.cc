// torch's CPU allocator charged to operator calls (see runtime/torch/charged_allocator.h).
//
// The wrapper hands out the inner allocator's memory. A charged allocation keeps its
// pointer as its context (so torch's raw_allocate/raw_deallocate stay valid) and is
// recorded in a table of pointer -> (charge, bytes), which its deleter looks up to give
// the bytes back; the table's mutex is taken once per charged allocation and free.
#include "runtime/torch/charged_allocator.h"

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>

#include <atomic>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "runtime/exception_status.h"

namespace myops::server {
namespace {

thread_local const std::shared_ptr<MemoryCharge>* tls_charge = nullptr;

struct Charged {
  std::shared_ptr<MemoryCharge> charge;
  int64_t bytes = 0;
};

// The live charged allocations. Leaked on purpose: tensors may be freed during exit.
struct Table {
  absl::Mutex mu;
  absl::flat_hash_map<void*, Charged> live ABSL_GUARDED_BY(mu);
  std::atomic<int64_t> count{0};  // live.size(), read without the lock
  c10::DeleterFnPtr inner_delete = nullptr;
};
Table& table() {
  static Table* t = new Table;
  return *t;
}

void ChargedDelete(void* data) {
  Table& t = table();
  Charged charged;
  if (t.count.load(std::memory_order_acquire) > 0) {
    absl::MutexLock lock(&t.mu);
    if (auto it = t.live.find(data); it != t.live.end()) {
      charged = std::move(it->second);
      t.live.erase(it);
      t.count.fetch_sub(1, std::memory_order_acq_rel);
    }
  }
  t.inner_delete(data);
  if (charged.charge != nullptr) charged.charge->Give(charged.bytes);
}

class ChargedAllocator final : public c10::Allocator {
 public:
  explicit ChargedAllocator(c10::Allocator* inner) : inner_(inner) {}

  c10::DataPtr allocate(size_t n) override {
    const std::shared_ptr<MemoryCharge>* charge = tls_charge;
    if (charge == nullptr || *charge == nullptr || n == 0) return inner_->allocate(n);
    const auto bytes = static_cast<int64_t>(n);
    if (absl::Status taken = (*charge)->Take(bytes); !taken.ok()) {
      throw CallRefused(std::move(taken));
    }
    c10::DataPtr inner;
    try {
      inner = inner_->allocate(n);
    } catch (...) {
      (*charge)->Give(bytes);
      throw;
    }
    void* data = inner.get();
    if (data == nullptr || inner.get_context() != data ||
        inner.get_deleter() != table().inner_delete) {
      (*charge)->Give(bytes);  // not memory this wrapper knows how to free
      return inner;
    }
    Table& t = table();
    {
      absl::MutexLock lock(&t.mu);
      t.live[data] = Charged{*charge, bytes};
      t.count.fetch_add(1, std::memory_order_acq_rel);
    }
    const c10::Device device = inner.device();
    inner.release_context();
    return c10::DataPtr(data, data, &ChargedDelete, device);
  }

  c10::DeleterFnPtr raw_deleter() const override { return &ChargedDelete; }

  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }

 private:
  c10::Allocator* const inner_;
};

// Installs the wrapper over torch's CPU allocator, once; false (nothing charged) when the
// allocator in place gives no raw deleter to wrap.
bool Install() {
  c10::Allocator* inner = c10::GetCPUAllocator();
  if (inner == nullptr || inner->raw_deleter() == nullptr) return false;
  table().inner_delete = inner->raw_deleter();
  static ChargedAllocator* wrapper = new ChargedAllocator(inner);
  c10::SetCPUAllocator(wrapper, /*priority=*/10);
  return c10::GetCPUAllocator() == wrapper;
}

}  // namespace

ChargeScope::ChargeScope(const std::shared_ptr<MemoryCharge>& charge) : previous_(tls_charge) {
  if (charge == nullptr) {
    tls_charge = nullptr;
    return;
  }
  static const bool installed = Install();
  tls_charge = installed ? &charge : nullptr;
}

ChargeScope::~ChargeScope() { tls_charge = previous_; }

}  // namespace myops::server
