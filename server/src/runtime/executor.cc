// Executor implementation: per-device queues and workers (see runtime/executor.h).
#include "runtime/executor.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <torch/version.h>

#include <atomic>
#include <deque>
#include <optional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "myops/ops.h"
#include "runtime/call_runner.h"
#include "runtime/exception_status.h"
#include "runtime/library_loader.h"
#include "runtime/torch/op_handles.h"
#include "runtime/torch/runner.h"

namespace myops::server {
namespace {

using Clock = std::chrono::steady_clock;

int64_t Nanos(Clock::duration d) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
}

// A job, or (`prepare` set) a request's preparation (Executor::Prepare).
struct Task {
  Job job;
  JobDone done;
  Clock::time_point enqueued;
  std::function<void()> prepare;
  int64_t* waited_ns = nullptr;  // set before `prepare` runs
};

// The queue and workers of one device. runners[i] (CUDA devices only) belongs to
// workers[i]; both are fixed before the workers start.
struct DeviceQueue {
  Device device;
  std::string name;
  absl::Mutex mu;
  absl::CondVar cv;  // signalled when a task comes or the queue closes
  std::deque<Task> tasks ABSL_GUARDED_BY(mu);
  bool closed ABSL_GUARDED_BY(mu) = false;
  std::vector<std::unique_ptr<DeviceRunner>> runners;
  std::vector<std::thread> workers;
};

// The queue whose worker this thread is; null on every other thread.
thread_local const DeviceQueue* t_worker_queue = nullptr;

class ExecutorImpl final : public Executor {
 public:
  ExecutorImpl(const ExecutorOptions& options, std::vector<Device> devices, RuntimeInfo info)
      : options_(options),
        devices_(std::move(devices)),
        info_(std::move(info)),
        cpu_runner_(MakeCpuRunner()) {}

  ~ExecutorImpl() override { Shutdown(); }

  // Creates every CUDA worker's runner (CUDA context, stream) here, where a failure is a
  // status, then starts all workers; if any runner fails, no worker has started.
  absl::Status Start(const CudaRunnerFactory& make_cuda_runner) {
    for (const Device& d : devices_.devices()) {
      auto q = std::make_unique<DeviceQueue>();
      q->device = d;
      q->name = d.Name();
      if (d.kind == DeviceKind::kCuda) {
        for (int i = 0; i < options_.cuda_workers; ++i) {
          try {
            q->runners.push_back(make_cuda_runner(d.index));
          } catch (...) {
            return absl::FailedPreconditionError(absl::StrCat(
                "could not set up ", q->name,
                " for serving: ", StatusFromException(std::current_exception()).message()));
          }
        }
      }
      if (d.kind == DeviceKind::kCpu && cpu_queue_ == nullptr) cpu_queue_ = q.get();
      queues_.push_back(std::move(q));
    }
    int total = 0;
    for (auto& q : queues_) {
      const int n = q->device.kind == DeviceKind::kCpu ? options_.cpu_workers
                                                       : static_cast<int>(q->runners.size());
      for (int i = 0; i < n; ++i) {
        DeviceRunner& runner = q->runners.empty() ? *cpu_runner_ : *q->runners[i];
        q->workers.emplace_back([this, q = q.get(), &runner] { WorkerLoop(q, runner); });
      }
      total += n;
    }
    info_.workers = total;
    return absl::OkStatus();
  }

  // Programs never run inline: their packages hold one model instance per CPU worker,
  // so on the workers no call waits for an instance, and no submitting (gRPC) thread
  // blocks on one.
  bool IsProgram(int op) const {
    const std::vector<OpInfo>& ops = info_.registry->ops();
    return op >= 0 && static_cast<size_t>(op) < ops.size() && ops[static_cast<size_t>(op)].program;
  }

  const DeviceSet& devices() const override { return devices_; }
  const RuntimeInfo& info() const override { return info_; }

  void Submit(Job job, JobDone done) override {
    DeviceQueue& q = *queues_.at(static_cast<size_t>(job.device_slot));
    Task task{std::move(job), std::move(done), Clock::now(), nullptr, nullptr};
    // On a worker of its own queue (a prepared request's job), a job runs where it is.
    if (q.device.kind == DeviceKind::kCpu &&
        (t_worker_queue == &q || (task.job.call->input_bytes <= options_.inline_max_bytes &&
                                  !IsProgram(task.job.call->op)))) {
      // Announce the inline run before checking `closed_` (both seq_cst): either Shutdown
      // sees it and waits for it, or this thread sees `closed_` and rejects the job.
      inline_running_.fetch_add(1);
      if (!closed_.load()) {
        RunTask(task, *cpu_runner_, q.name, *info_.registry);
        inline_running_.fetch_sub(1);
        return;
      }
      inline_running_.fetch_sub(1);
      task.done(absl::UnavailableError("the server is shutting down"), JobTiming{0, 0, q.name});
      return;
    }
    {
      absl::MutexLock lock(&q.mu);
      if (!q.closed) {
        q.tasks.push_back(std::move(task));
        q.cv.Signal();
        return;
      }
    }
    task.done(absl::UnavailableError("the server is shutting down"), JobTiming{0, 0, q.name});
  }

  void Prepare(int64_t input_bytes, int64_t* waited_ns, std::function<void()> prepare) override {
    DeviceQueue* q = cpu_queue_;
    if (q != nullptr && input_bytes > options_.inline_max_bytes && t_worker_queue == nullptr) {
      absl::MutexLock lock(&q->mu);
      if (!q->closed) {
        q->tasks.push_back(Task{Job{}, nullptr, Clock::now(), std::move(prepare), waited_ns});
        q->cv.Signal();
        return;
      }
    }
    *waited_ns = 0;
    prepare();
  }

  void Shutdown() override {
    closed_.store(true);
    while (inline_running_.load() > 0) std::this_thread::yield();  // inline jobs finish
    for (auto& q : queues_) {
      absl::MutexLock lock(&q->mu);
      q->closed = true;
      q->cv.SignalAll();
    }
    for (auto& q : queues_) {
      for (auto& w : q->workers)
        if (w.joinable()) w.join();
    }
  }

 private:
  void WorkerLoop(DeviceQueue* q, DeviceRunner& runner) {
    at::init_num_threads();  // this thread's intra-op thread count
    t_worker_queue = q;
    for (;;) {
      std::optional<Task> task;
      {
        absl::MutexLock lock(&q->mu);
        while (!q->closed && q->tasks.empty()) q->cv.Wait(&q->mu);
        if (q->tasks.empty()) return;  // closed and drained
        task.emplace(std::move(q->tasks.front()));
        q->tasks.pop_front();
      }
      if (task->prepare) {
        *task->waited_ns = Nanos(Clock::now() - task->enqueued);
        task->prepare();
      } else {
        RunTask(*task, runner, q->name, *info_.registry);
      }
    }
  }

  // Operator exceptions are caught in RunOnRunner (runtime/call_runner.h).
  static void RunTask(Task& task, DeviceRunner& runner, const std::string& device,
                      const OpRegistry& registry) {
    JobTiming timing{Nanos(Clock::now() - task.enqueued), 0, device};
    absl::Status status;
    // The deadline first: gRPC also cancels a call whose deadline passed, and the
    // deadline is then the cause worth reporting.
    if (Clock::now() >= task.job.deadline) {
      status = absl::DeadlineExceededError(absl::StrCat(
          "the deadline passed before the request ran (queued ", timing.queue_ns / 1000, " us)"));
    } else if (task.job.is_cancelled && task.job.is_cancelled()) {
      status = absl::CancelledError("the request was cancelled before it ran");
    } else {
      status = RunOnRunner(runner, registry, *task.job.call, &timing.compute_ns);
    }
    task.done(std::move(status), timing);
  }

  ExecutorOptions options_;
  DeviceSet devices_;
  RuntimeInfo info_;
  std::unique_ptr<DeviceRunner> cpu_runner_;
  std::vector<std::unique_ptr<DeviceQueue>> queues_;  // one per device slot; fixed after Start
  DeviceQueue* cpu_queue_ = nullptr;  // the CPU's among queues_ (null: none); fixed after Start
  // The inline path's shutdown handshake, lock-free (it is the small-request fast path):
  // set by Shutdown; inline jobs running on submitting threads.
  std::atomic<bool> closed_{false};
  std::atomic<int> inline_running_{0};
};

}  // namespace

absl::StatusOr<std::unique_ptr<Executor>> Executor::Create(const ExecutorOptions& given) {
  if (absl::Status loaded = LoadOperatorLibraries(given.libraries, given.libpython); !loaded.ok()) {
    return loaded;
  }
  try {
    myops::check_registered();
  } catch (...) {
    return absl::FailedPreconditionError(
        absl::StrCat("the myops operators are not registered: ",
                     StatusFromException(std::current_exception()).message()));
  }
  ExecutorOptions options = given;
  if (options.cpu_workers <= 0) {
    options.cpu_workers = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }
  if (options.cuda_workers <= 0) options.cuda_workers = 1;
  if (options.intra_op_threads > 0) at::set_num_threads(options.intra_op_threads);

  const int gpus = at::hasCUDA() ? static_cast<int>(at::getNumGPUs()) : 0;
  std::string spec = options.devices;
  if (spec == "auto") spec = gpus > 0 ? "cuda,cpu" : "cpu";
  auto devices = ParseDeviceList(spec, gpus);
  if (!devices.ok()) return devices.status();

  RuntimeInfo info;
  info.torch_version = TORCH_VERSION;
  info.cuda_version = CudaBuildVersion();
  for (const Device& d : *devices) {
    if (d.kind == DeviceKind::kCpu) {
      info.devices.push_back({"cpu",
                              absl::StrCat("CPU (", at::get_cpu_capability(), ", ",
                                           at::get_num_threads(), " intra-op threads)"),
                              0});
    } else {
      try {
        info.devices.push_back(CudaDeviceInfo(d.index));
      } catch (...) {
        return absl::FailedPreconditionError(
            absl::StrCat("could not query ", d.Name(), ": ",
                         StatusFromException(std::current_exception()).message()));
      }
    }
  }
  auto patterns = OpPatterns::Parse(options.ops);
  if (!patterns.ok()) return patterns.status();
  std::vector<ProgramSpec> programs;
  for (const std::string& text : options.programs) {
    auto spec = ParseProgramSpec(text);
    if (!spec.ok()) return spec.status();
    programs.push_back(*std::move(spec));
  }
  auto registry = OpRegistry::Build(*patterns, programs, {*devices, options.cpu_workers});
  if (!registry.ok()) return registry.status();
  info.registry = std::move(*registry);
  return StartExecutor(options, std::move(*devices), std::move(info), MakeCudaRunner);
}

absl::StatusOr<std::unique_ptr<Executor>> StartExecutor(const ExecutorOptions& options,
                                                        std::vector<Device> devices,
                                                        RuntimeInfo info,
                                                        const CudaRunnerFactory& make_cuda_runner) {
  if (info.registry == nullptr)
    info.registry = std::make_shared<const OpRegistry>(std::vector<OpInfo>{});
  auto executor = std::make_unique<ExecutorImpl>(options, std::move(devices), std::move(info));
  if (absl::Status s = executor->Start(make_cuda_runner); !s.ok()) return s;
  return executor;
}

}  // namespace myops::server
