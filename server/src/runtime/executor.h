// The executor: owns the worker threads that run operators on devices. This header is
// free of torch and protobuf; the pipeline hands it calls of plain values (runtime/value.h).
//
// Per device it keeps a queue and a set of workers; each CUDA worker owns one stream
// from the device's stream pool and runs under CUDAGuard + CUDAStreamGuard with pinned
// staging for host<->device copies. All operator work runs under c10::InferenceMode.
// Exceptions from operator code are caught in one place (RunOnRunner, runtime/call_runner.h)
// and mapped to absl::Status.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/device.h"
#include "runtime/op_registry.h"
#include "runtime/tensor_view.h"
#include "runtime/value.h"

namespace myops::server {

struct ExecutorOptions {
  std::string devices = "auto";        // "auto" (all GPUs then cpu, or cpu) or a --devices list
  std::string ops = "myops::*";        // the served operators (--ops; OpPatterns)
  std::vector<std::string> libraries;  // operator libraries to load first (--load-library)
  std::vector<std::string> programs;   // exported programs, NAME=PATH (--program; program.h)
  std::string libpython;     // for libraries that are Python extensions (library_loader.h)
  int cpu_workers = 0;       // 0: one per hardware thread
  int cuda_workers = 4;      // per GPU; each owns one CUDA stream
  int intra_op_threads = 0;  // PyTorch intra-op threads; 0: PyTorch's default
  // CPU requests with at most this many input bytes run on the submitting thread (gRPC's):
  // a thread hop costs more than computing them. 0 disables. Never programs' calls.
  // Operators that take long per input byte (matmul, convolutions) may want less: the
  // thread serves other calls' I/O too.
  int64_t inline_max_bytes = 1 << 20;  // Measured: bench/README.md, "Inline small requests".
};

// One call of a served operator, bound (BindArguments). The call must stay valid until
// `done` has been called.
struct Job {
  OpCall* call = nullptr;  // bound arguments in, results out; never null
  int device_slot = 0;     // index into Executor::devices().devices()
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  std::function<bool()> is_cancelled;  // optional; polled before the job runs
};

struct JobTiming {
  int64_t queue_ns = 0;    // submit -> a worker starts it
  int64_t compute_ns = 0;  // the call, wall clock; on CUDA also the copies of its tensors
                           // to the device and back, up to the stream's synchronization
  std::string device;      // "cpu", "cuda:0", ...
};

// Called exactly once per Submit, on a worker thread or (inline jobs, rejections) on
// the submitting thread. Must not block.
using JobDone = std::function<void(absl::Status, const JobTiming&)>;

// What the runtime reports about itself (for ServerInfo and the startup line).
struct RuntimeInfo {
  std::string torch_version;
  std::string cuda_version;  // "" when torch has no CUDA
  struct DeviceInfo {
    std::string name, description;
    int64_t total_memory_bytes = 0;
  };
  std::vector<DeviceInfo> devices;
  // The served operators (never null once the executor runs).
  std::shared_ptr<const OpRegistry> registry;
  int workers = 0;
};

// Thread-safe: Submit and Prepare may be called from any number of threads concurrently.
class Executor {
 public:
  // Loads the operator libraries, detects devices, builds the registry of the served
  // operators (--ops) and programs (--program), starts workers.
  static absl::StatusOr<std::unique_ptr<Executor>> Create(const ExecutorOptions& options);
  virtual ~Executor() = default;

  virtual const DeviceSet& devices() const = 0;
  virtual const RuntimeInfo& info() const = 0;

  // Never blocks on other jobs. After Shutdown, jobs are rejected with UNAVAILABLE.
  // A CPU job submitted from a CPU worker (from Prepare's `prepare`) runs on that worker.
  virtual void Submit(Job job, JobDone done) = 0;

  // Runs `prepare` exactly once: a front end's parse and decode of a request with
  // `input_bytes` of tensor contents, ending in its Submit or its refusal. Where a CPU
  // job of that size would run inline (at most inline_max_bytes), on the calling thread;
  // a larger one on a CPU worker, so that the calling thread (gRPC's, which also reads
  // every connection) goes on reading while the request is parsed and copied; a CPU job
  // submitted from there runs on that worker. On the calling thread when there are no
  // CPU workers, from a worker, or after Shutdown (its job is then refused). Before it
  // runs, `*waited_ns` is set to how long it waited for a worker (0 on the calling
  // thread). Never blocks on other jobs. What a waiting request holds is the front end's
  // to have reserved before (Pipeline::ReserveCallRequest). The default (executors for
  // tests) runs it on the calling thread.
  virtual void Prepare(int64_t input_bytes, int64_t* waited_ns, std::function<void()> prepare) {
    *waited_ns = 0;
    prepare();
  }

  // Runs what is queued, then joins the workers. Idempotent.
  virtual void Shutdown() = 0;
};

}  // namespace myops::server
