// BusGuard (see bus_guard.h): a fixed table of atomically published ranges and a SIGBUS
// handler that patches faulting pages inside them with anonymous memory.
#include "shm/bus_guard.h"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>

#include "absl/base/const_init.h"
#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace myops::server {
namespace {

ABSL_CONST_INIT absl::Mutex g_mu(absl::kConstInit);  // guards slot ownership and installation

struct Slot {
  // begin == 0: free. A range is published by storing end, then begin (release), and
  // read by the handler as begin, then end (acquire).
  std::atomic<uintptr_t> begin{0};
  std::atomic<uintptr_t> end{0};
  std::atomic<bool> tripped{false};
  bool taken ABSL_GUARDED_BY(g_mu) = false;
};

Slot g_slots[BusGuard::kSlots];
struct sigaction g_previous;
bool g_installed ABSL_GUARDED_BY(g_mu) = false;

void OnSigbus(int sig, siginfo_t* info, void* context) {
  const auto address = reinterpret_cast<uintptr_t>(info->si_addr);
  for (Slot& slot : g_slots) {
    const uintptr_t begin = slot.begin.load(std::memory_order_acquire);
    if (begin == 0 || address < begin || address >= slot.end.load(std::memory_order_acquire)) {
      continue;
    }
    const uintptr_t page = address & ~(static_cast<uintptr_t>(sysconf(_SC_PAGESIZE)) - 1);
    // mmap is a plain system call on Linux and safe here: it replaces the page whose
    // backing file shrank; the faulting instruction is retried on the new page.
    void* patched = mmap(reinterpret_cast<void*>(page), static_cast<size_t>(sysconf(_SC_PAGESIZE)),
                         PROT_READ | PROT_WRITE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (patched != MAP_FAILED) {
      slot.tripped.store(true, std::memory_order_relaxed);
      return;
    }
    break;
  }
  // Not ours: the previous disposition, as if the guard were not there.
  if (g_previous.sa_flags & SA_SIGINFO) {
    if (g_previous.sa_sigaction != nullptr) return g_previous.sa_sigaction(sig, info, context);
  } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
    return g_previous.sa_handler(sig);
  }
  signal(SIGBUS, SIG_DFL);
  raise(SIGBUS);
}

}  // namespace

absl::StatusOr<int> BusGuard::Guard(void* base, size_t length) {
  absl::MutexLock lock(&g_mu);
  if (!g_installed) {
    struct sigaction action = {};
    action.sa_sigaction = OnSigbus;
    action.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&action.sa_mask);
    if (sigaction(SIGBUS, &action, &g_previous) != 0) {
      return absl::InternalError("cannot install the SIGBUS handler of shared memory");
    }
    g_installed = true;
  }
  for (int i = 0; i < kSlots; ++i) {
    Slot& slot = g_slots[i];
    if (slot.taken) continue;
    slot.taken = true;
    slot.tripped.store(false, std::memory_order_relaxed);
    slot.end.store(reinterpret_cast<uintptr_t>(base) + length, std::memory_order_release);
    slot.begin.store(reinterpret_cast<uintptr_t>(base), std::memory_order_release);
    return i;
  }
  return absl::ResourceExhaustedError("too many shared memory mappings are guarded at once");
}

void BusGuard::Release(int slot) {
  absl::MutexLock lock(&g_mu);
  g_slots[slot].begin.store(0, std::memory_order_release);
  g_slots[slot].end.store(0, std::memory_order_release);
  g_slots[slot].taken = false;
}

bool BusGuard::Tripped(int slot) { return g_slots[slot].tripped.load(std::memory_order_relaxed); }

}  // namespace myops::server
