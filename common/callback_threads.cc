// gRPC's callback queue with our count of threads (see callback_threads.h).
#include "myops/common/callback_threads.h"

#include <grpc/grpc.h>
#include <grpcpp/completion_queue.h>
#include <grpcpp/version_info.h>
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "absl/base/const_init.h"
#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace myops {
namespace {

ABSL_CONST_INIT absl::Mutex g_mu(absl::kConstInit);
int g_configured ABSL_GUARDED_BY(g_mu) = 0;  // 0: DefaultCallbackThreads()
// The queue while any server or channel holds it (refs > 0), and its threads.
grpc::CompletionQueue* g_queue ABSL_GUARDED_BY(g_mu) = nullptr;
std::vector<std::thread>* g_threads ABSL_GUARDED_BY(g_mu) = nullptr;
int g_refs ABSL_GUARDED_BY(g_mu) = 0;
std::atomic<int> g_running{0};

// A thread's life: takes each completion and runs its functor inline (what gRPC's own
// threads do: the functor is the callback), until the queue is shut down and drained.
void Drain(grpc_completion_queue* cq) {
  pthread_setname_np(pthread_self(), "grpc-callback");
  for (;;) {
    grpc_event event = grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), nullptr);
    if (event.type == GRPC_QUEUE_SHUTDOWN) return;
    if (event.type != GRPC_OP_COMPLETE) continue;
    auto* functor = static_cast<grpc_completion_queue_functor*>(event.tag);
    functor->functor_run(functor, event.success);
  }
}

[[maybe_unused]] grpc::CompletionQueue* Acquire() {
  absl::MutexLock lock(&g_mu);
  if (g_refs++ == 0) {
    g_queue = new grpc::CompletionQueue();
    const int n = g_configured > 0 ? g_configured : DefaultCallbackThreads();
    g_threads = new std::vector<std::thread>();
    g_threads->reserve(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) g_threads->emplace_back(Drain, g_queue->cq());
    g_running.store(n, std::memory_order_release);
  }
  return g_queue;
}

[[maybe_unused]] void Release(grpc::CompletionQueue* cq) {
  std::vector<std::thread>* threads = nullptr;
  {
    absl::MutexLock lock(&g_mu);
    if (--g_refs > 0) return;
    threads = g_threads;
    g_queue = nullptr;
    g_threads = nullptr;
    g_running.store(0, std::memory_order_release);
  }
  // Outside the lock: a callback still running may create a channel (Acquire).
  cq->Shutdown();
  for (std::thread& t : *threads) t.join();
  delete threads;
  delete cq;
}

}  // namespace

int DefaultCallbackThreads() {
  return std::clamp(static_cast<int>(std::thread::hardware_concurrency() / 4), 1, 16);
}

void SetCallbackThreads(int threads) {
  absl::MutexLock lock(&g_mu);
  g_configured = threads <= 0 ? 0 : std::min(threads, 64);
}

int CallbackThreads() { return g_running.load(std::memory_order_acquire); }

}  // namespace myops

// gRPC 1.51's declarations (grpcpp/completion_queue.h: private static members, called by
// grpc::Server and grpc::Channel when they first need callbacks and when destroyed).
#if GRPC_CPP_VERSION_MAJOR == 1 && GRPC_CPP_VERSION_MINOR == 51
namespace grpc {
CompletionQueue* CompletionQueue::CallbackAlternativeCQ() { return myops::Acquire(); }
void CompletionQueue::ReleaseCallbackAlternativeCQ(CompletionQueue* cq) { myops::Release(cq); }
}  // namespace grpc
#endif
