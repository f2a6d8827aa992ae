// Load generation (see runner.h).
#include "runner.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <deque>
#include <mutex>
#include <random>
#include <thread>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "collector.h"
#include "tensor_values.h"

namespace myops::loadtest {
namespace {

using Clock = std::chrono::steady_clock;
using myops::client::Client;

int64_t Nanos(Clock::duration d) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
}

// The tensor every request sends (scale_shift) or the arguments (--op); read-only once
// built.
struct Payload {
  myops::client::Tensor input;
  int64_t bytes_per_request = 0;  // input + output (scale_shift); input only (--op)
};

// Bytes of the tensors among `values` (tensor lists included).
int64_t TensorBytes(absl::Span<const myops::client::Value> values) {
  int64_t n = 0;
  for (const myops::client::Value& v : values) {
    if (v.kind() == myops::client::Value::Kind::kTensor) {
      n += static_cast<int64_t>(v.tensor().size_bytes);
    } else if (v.kind() == myops::client::Value::Kind::kTensorList) {
      for (const auto& t : v.tensor_list()) n += static_cast<int64_t>(t.size_bytes);
    }
  }
  return n;
}

class LoadRun final {
 public:
  LoadRun(const LoadSpec& spec, std::vector<std::unique_ptr<Client>> clients,
          std::vector<std::unique_ptr<KServeClient>> kserve_clients, Payload payload)
      : spec_(spec),
        clients_(std::move(clients)),
        kserve_clients_(std::move(kserve_clients)),
        payload_(std::move(payload)) {}

  RunResult Execute(const ProgressFn& progress) {
    if (spec_.streaming) ConnectEveryReplica();
    std::atomic_store(&active_, std::make_shared<Collector>());
    std::vector<std::thread> threads;
    if (spec_.rate > 0) {
      threads.emplace_back([this] { OpenLoop(); });
    } else if (spec_.driver == LoadSpec::Driver::kCallbacks) {
      for (int i = 0; i < spec_.concurrency; ++i) chains_.emplace_back().index = i;
      outstanding_->fetch_add(spec_.concurrency);
      for (Chain& chain : chains_) Continue(chain);
    } else {
      for (int i = 0; i < spec_.concurrency; ++i) {
        threads.emplace_back([this, i] {
          if (spec_.protocol == Protocol::kKServe) {
            KServeWorker(i);
          } else if (spec_.op_values != nullptr) {
            spec_.streaming ? CallStreamWorker(i) : CallWorker(i);
          } else {
            spec_.streaming ? StreamWorker(i) : UnaryWorker(i);
          }
        });
      }
    }
    RunResult result;
    if (spec_.warmup.count() > 0) Window(spec_.warmup, 0, progress, /*warmup=*/true);
    for (int w = 0; w < std::max(1, spec_.max_windows); ++w) {
      Stats s = Window(spec_.window, spec_.max_requests, progress, false);
      result.window_throughput.push_back(s.throughput());
      result.total.Merge(s);
      const size_t n = result.window_throughput.size();
      if (n >= 2) {
        const double a = result.window_throughput[n - 2], b = result.window_throughput[n - 1];
        result.stable = std::abs(a - b) <= spec_.stability * std::max(a, b);
        if (result.stable) break;
      } else {
        result.stable = spec_.max_windows <= 1;
      }
    }
    stop_.store(true);
    for (auto& t : threads) t.join();
    if (chains_.empty()) {
      WaitForOutstanding();
    } else {
      // The chains' callbacks use this run: wait for every last one (each call ends by its
      // deadline).
      while (outstanding_->load() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return result;
  }

 private:
  // A stream stays on the replica it opened on, and round_robin reports a channel READY as
  // soon as its first replica is: streams opened at once would all land there. Unary calls
  // for the warmup period (each one on the next READY replica) give every replica time to
  // connect before the streams open.
  void ConnectEveryReplica() {
    const auto until = Clock::now() + spec_.warmup;
    while (Clock::now() < until) {
      for (auto& client : clients_) (void)client->GetServerInfo();
    }
  }

  // Measures one window into a fresh collector; returns what it saw.
  Stats Window(std::chrono::milliseconds length, int64_t max_requests, const ProgressFn& progress,
               bool warmup) {
    auto collector = std::make_shared<Collector>();
    std::atomic_store(&active_, collector);
    const auto start = Clock::now();
    auto next_report = start + std::chrono::seconds(1);
    for (;;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      const auto now = Clock::now();
      const bool by_count = !warmup && max_requests > 0;
      // A timed window also waits for some completions (slow servers, big payloads: a rate
      // from a handful of requests is mostly noise), up to 20 window lengths.
      const int64_t min_done =
          warmup ? 0
                 : (spec_.min_requests > 0 ? spec_.min_requests
                                           : std::max<int64_t>(5, spec_.concurrency));
      if (by_count ? collector->done() >= max_requests
                   : (now - start >= length &&
                      (collector->done() >= min_done || now - start >= 20 * length))) {
        break;
      }
      if (now >= next_report && progress) {
        progress(collector->Snapshot(std::chrono::duration<double>(now - start).count()), warmup);
        next_report += std::chrono::seconds(1);
      }
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    std::atomic_store(&active_,
                      std::make_shared<Collector>());  // late completions land in a discarded one
    return collector->Snapshot(seconds);
  }

  myops::client::CallOptions Call() const {
    myops::client::CallOptions o;
    o.deadline = spec_.deadline;
    o.device = spec_.device;
    return o;
  }

  void UnaryWorker(int index) {
    Client& client = *clients_[static_cast<size_t>(index) % clients_.size()];
    myops::client::Tensor out = payload_.input;
    const auto call = Call();
    while (!stop_.load(std::memory_order_relaxed)) {
      auto collector = std::atomic_load(&active_);
      const auto t0 = Clock::now();
      auto r = client.ScaleShiftInto(payload_.input.view(), 2.0, 1.0, out.mutable_view(), call);
      const int64_t ns = Nanos(Clock::now() - t0);
      r.ok() ? collector->Ok(ns, *r, payload_.bytes_per_request) : collector->Error(r.status());
    }
  }

  // --protocol kserve: ModelInfer of scale_shift, as UnaryWorker's ScaleShiftInto.
  void KServeWorker(int index) {
    KServeClient& client = *kserve_clients_[static_cast<size_t>(index) % kserve_clients_.size()];
    myops::client::Tensor out = payload_.input;
    KServeClient::SendBuffer buffer;
    while (!stop_.load(std::memory_order_relaxed)) {
      auto collector = std::atomic_load(&active_);
      const auto t0 = Clock::now();
      absl::Status r = client.Infer(payload_.input.view(), 2.0, 1.0, out.mutable_view(), &buffer,
                                    spec_.deadline);
      const int64_t ns = Nanos(Clock::now() - t0);
      r.ok() ? collector->Ok(ns, payload_.bytes_per_request) : collector->Error(r);
    }
  }

  // One stream session at a time per worker, reopened when it fails (the failure counted):
  // `open(call)` opens one, `exchange(session)` sends a request and receives its result
  // (the stream's own failure as a non-OK status), `record(collector, ns, result)` counts it.
  template <typename Open, typename Exchange, typename RecordResult>
  void StreamLoop(const Open& open, const Exchange& exchange, const RecordResult& record) {
    auto call = Call();
    call.deadline = std::chrono::hours(24);  // a session's deadline covers the whole run
    std::decay_t<decltype(open(call).value())> session;
    while (!stop_.load(std::memory_order_relaxed)) {
      auto collector = std::atomic_load(&active_);
      if (!session) {
        auto opened = open(call);
        if (!opened.ok()) {
          collector->Error(opened.status());
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
          continue;
        }
        session = std::move(*opened);
      }
      const auto t0 = Clock::now();
      auto r = exchange(*session);
      const int64_t ns = Nanos(Clock::now() - t0);
      if (!r.ok()) {  // the stream itself failed: count it and open a new one
        collector->Error(r.status());
        session.reset();
      } else {
        record(*collector, ns, r->result);
      }
    }
    if (session) (void)session->Close();
  }

  void StreamWorker(int index) {
    Client& client = *clients_[static_cast<size_t>(index) % clients_.size()];
    StreamLoop([&](const myops::client::CallOptions& call) { return client.OpenStream(call); },
               [&](myops::client::StreamSession& session) {
                 auto id = session.Send(payload_.input.view(), 2.0, 1.0);
                 return id.ok() ? session.Receive()
                                : absl::StatusOr<myops::client::StreamResult>(id.status());
               },
               [&](Collector& collector, int64_t ns, const auto& result) {
                 result.ok() ? collector.Ok(ns, result->timing, payload_.bytes_per_request)
                             : collector.Error(result.status());
               });
  }

  // --op: generic Calls, their outputs' bytes counted with the arguments'.
  void Record(Collector& collector, int64_t ns,
              const absl::StatusOr<myops::client::CallResult>& r) {
    r.ok() ? collector.Ok(ns, r->timing, payload_.bytes_per_request + TensorBytes(r->outputs))
           : collector.Error(r.status());
  }

  void CallWorker(int index) {
    Client& client = *clients_[static_cast<size_t>(index) % clients_.size()];
    const myops::cli::CallArgs& args = *spec_.op_values;
    const auto call = Call();
    while (!stop_.load(std::memory_order_relaxed)) {
      auto collector = std::atomic_load(&active_);
      const auto t0 = Clock::now();
      auto r = client.Call(spec_.op, args.positional, args.named, call);
      Record(*collector, Nanos(Clock::now() - t0), r);
    }
  }

  void CallStreamWorker(int index) {
    Client& client = *clients_[static_cast<size_t>(index) % clients_.size()];
    const myops::cli::CallArgs& args = *spec_.op_values;
    StreamLoop([&](const myops::client::CallOptions& call) { return client.OpenCallStream(call); },
               [&](myops::client::CallStreamSession& session) {
                 auto id = session.Send(spec_.op, args.positional, args.named);
                 return id.ok() ? session.Receive()
                                : absl::StatusOr<myops::client::CallStreamResult>(id.status());
               },
               [&](Collector& collector, int64_t ns, const auto& result) {
                 Record(collector, ns, result);
               });
  }

  // LoadSpec::Driver::kCallbacks: one of the closed loop's requests in flight, a chain of
  // asynchronous calls. Only the thread in Continue, then the callback of the call it
  // started, touch a chain (one after the other).
  struct Chain {
    size_t index = 0;
    KServeClient::SendBuffer buffer;  // --protocol kserve
    // Who starts the next call: kStarting while Continue is starting one, kInFlight once
    // it has; the call's callback sets kDone. The one of the two that finds the other's
    // mark continues, so a callback run before the start returns (an error found at
    // once) makes Continue loop instead of recursing.
    enum State { kStarting, kInFlight, kDone };
    std::atomic<State> state{kDone};
  };

  // Starts the chain's next call, and the one after while calls complete before they
  // are started; when the run stops, ends the chain (outstanding_ counts chains).
  void Continue(Chain& chain) {
    do {
      if (stop_.load(std::memory_order_relaxed)) {
        outstanding_->fetch_sub(1);
        return;
      }
      chain.state.store(Chain::kStarting);
      Start(chain);
    } while (chain.state.exchange(Chain::kInFlight) == Chain::kDone);
  }

  // Ends a chain's call: counts it in the window it started in, and continues the chain
  // unless Continue, still starting it, will.
  template <typename Record>
  auto Completion(Chain& chain, Record record) {
    return [this, &chain, record = std::move(record), collector = std::atomic_load(&active_),
            t0 = Clock::now()](auto result) {
      record(*collector, Nanos(Clock::now() - t0), result);
      if (chain.state.exchange(Chain::kDone) == Chain::kInFlight) Continue(chain);
    };
  }

  void Start(Chain& chain) {
    const int64_t bytes = payload_.bytes_per_request;
    if (spec_.protocol == Protocol::kKServe) {
      kserve_clients_[chain.index % kserve_clients_.size()]->InferAsync(
          payload_.input.view(), 2.0, 1.0, &chain.buffer,
          Completion(chain,
                     [bytes](Collector& c, int64_t ns, const absl::Status& r) {
                       r.ok() ? c.Ok(ns, bytes) : c.Error(r);
                     }),
          spec_.deadline);
      return;
    }
    Client& client = *clients_[chain.index % clients_.size()];
    if (spec_.op_values != nullptr) {
      client.CallAsync(spec_.op, spec_.op_values->positional, spec_.op_values->named,
                       Completion(chain,
                                  [this](Collector& c, int64_t ns,
                                         const absl::StatusOr<myops::client::CallResult>& r) {
                                    Record(c, ns, r);
                                  }),
                       Call());
      return;
    }
    client.ScaleShiftAsync(
        payload_.input.view(), 2.0, 1.0,
        Completion(chain,
                   [bytes](Collector& c, int64_t ns,
                           const absl::StatusOr<myops::client::ScaleShiftResult>& r) {
                     r.ok() ? c.Ok(ns, r->timing, bytes) : c.Error(r.status());
                   }),
        Call());
  }

  // Sends at the target rate; each latency counts from the intended send time.
  void OpenLoop() {
    std::mt19937_64 rng(42);
    std::exponential_distribution<double> exp(spec_.rate);
    const auto call = Call();
    auto intended = Clock::now();
    uint64_t n = 0;
    constexpr int64_t kMaxOutstanding = 20000;
    while (!stop_.load(std::memory_order_relaxed)) {
      const double gap = spec_.poisson ? exp(rng) : 1.0 / spec_.rate;
      intended += std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(gap));
      std::this_thread::sleep_until(intended);
      auto collector = std::atomic_load(&active_);
      if (outstanding_->load() >= kMaxOutstanding) {
        collector->Error(absl::ResourceExhaustedError("client: too many requests outstanding"));
        continue;
      }
      outstanding_->fetch_add(1);
      if (spec_.protocol == Protocol::kKServe) {
        kserve_clients_[n++ % kserve_clients_.size()]->InferAsync(
            payload_.input.view(), 2.0, 1.0, nullptr,
            [outstanding = outstanding_, collector, intended,
             bytes = payload_.bytes_per_request](absl::Status r) {
              const int64_t ns = Nanos(Clock::now() - intended);
              r.ok() ? collector->Ok(ns, bytes) : collector->Error(r);
              outstanding->fetch_sub(1);
            },
            spec_.deadline);
        continue;
      }
      Client& client = *clients_[n++ % clients_.size()];
      // The callback may run after this run has given up waiting and is gone: it owns
      // everything it touches (the collector, the counter) and copies the rest.
      if (spec_.op_values != nullptr) {
        client.CallAsync(
            spec_.op, spec_.op_values->positional, spec_.op_values->named,
            [outstanding = outstanding_, collector, intended,
             bytes = payload_.bytes_per_request](absl::StatusOr<myops::client::CallResult> r) {
              const int64_t ns = Nanos(Clock::now() - intended);
              r.ok() ? collector->Ok(ns, r->timing, bytes + TensorBytes(r->outputs))
                     : collector->Error(r.status());
              outstanding->fetch_sub(1);
            },
            call);
        continue;
      }
      client.ScaleShiftAsync(
          payload_.input.view(), 2.0, 1.0,
          [outstanding = outstanding_, collector, intended,
           bytes = payload_.bytes_per_request](absl::StatusOr<myops::client::ScaleShiftResult> r) {
            const int64_t ns = Nanos(Clock::now() - intended);
            r.ok() ? collector->Ok(ns, r->timing, bytes) : collector->Error(r.status());
            outstanding->fetch_sub(1);
          },
          call);
    }
  }

  // Every call ends by its deadline, so this normally returns when the last callback has
  // run; if callbacks are late past the limit (a starved machine) the run returns anyway
  // and those callbacks, which own what they use, finish on their own.
  void WaitForOutstanding() {
    const auto limit = Clock::now() + spec_.deadline + std::chrono::seconds(1);
    while (outstanding_->load() > 0 && Clock::now() < limit) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }

  const LoadSpec spec_;
  std::vector<std::unique_ptr<Client>> clients_;
  std::vector<std::unique_ptr<KServeClient>> kserve_clients_;  // --protocol kserve
  const Payload payload_;
  std::shared_ptr<Collector> active_;  // the window being measured (atomic_load/store)
  std::atomic<bool> stop_{false};
  std::deque<Chain> chains_;  // LoadSpec::Driver::kCallbacks (never moved: callbacks hold them)
  // Asynchronous calls not yet completed; shared with their callbacks, which may outlive
  // this run.
  const std::shared_ptr<std::atomic<int64_t>> outstanding_ =
      std::make_shared<std::atomic<int64_t>>(0);
};

// OK when the server lists `op` ("name" or "name.overload") as served.
absl::Status CheckServed(Client& client, const std::string& op) {
  auto ops = client.ListOperators();
  if (!ops.ok()) return ops.status();
  std::vector<std::string> served;
  for (const myops::client::OperatorDescription& d : *ops) {
    const std::string name = d.overload.empty() ? d.name : absl::StrCat(d.name, ".", d.overload);
    if (name == op) {
      if (d.served) return absl::OkStatus();
      return absl::FailedPreconditionError(absl::StrCat(op, " is not served: ", d.reason));
    }
    if (d.served) served.push_back(name);
  }
  return absl::NotFoundError(absl::StrCat("the server does not serve ", op, "; it serves ",
                                          served.empty() ? "none" : absl::StrJoin(served, ", ")));
}

}  // namespace

int64_t ArgumentBytes(const LoadSpec& spec) {
  if (spec.op_values == nullptr) return 0;
  const std::vector<myops::client::Value>& positional = spec.op_values->positional;
  int64_t n = TensorBytes(positional);
  for (const myops::client::NamedArg& arg : spec.op_values->named) {
    n += TensorBytes(absl::MakeConstSpan(&arg.value, 1));
  }
  return n;
}

absl::StatusOr<RunResult> Run(const LoadSpec& spec, const ProgressFn& progress) {
  if (spec.rate <= 0 && spec.concurrency < 1) {
    return absl::InvalidArgumentError("concurrency must be >= 1 (or give a rate)");
  }
  if (spec.driver == LoadSpec::Driver::kCallbacks && spec.streaming) {
    return absl::InvalidArgumentError("--driver callbacks runs unary calls only (no --stream)");
  }
  if (spec.rate > 0 && spec.streaming) {
    return absl::InvalidArgumentError("open loop (--rate) runs unary calls only");
  }
  if (spec.protocol == Protocol::kKServe && (spec.streaming || spec.op_values != nullptr)) {
    return absl::InvalidArgumentError(
        "--protocol kserve loads ModelInfer of myops::scale_shift only (no --stream, no --op)");
  }
  Payload payload;
  if (spec.op_values != nullptr) {
    payload.bytes_per_request = ArgumentBytes(spec);
  } else {
    auto input = myops::client::Tensor::Allocate(spec.dtype, spec.shape);
    if (!input.ok()) return input.status();
    myops::cli::FillRandom(1, &*input);
    payload.input = std::move(*input);
    payload.bytes_per_request = 2 * static_cast<int64_t>(payload.input.size_bytes());
  }

  if (spec.protocol == Protocol::kKServe) {
    std::vector<std::unique_ptr<KServeClient>> kserve;
    for (int i = 0; i < std::max(1, spec.connections); ++i) {
      KServeOptions options;
      options.target = spec.target;
      options.auth_token = spec.auth_token;
      options.channel_id = i;
      options.scalars = spec.kserve_scalars;
      auto client = KServeClient::Create(options);
      if (!client.ok()) return client.status();
      kserve.push_back(std::move(*client));
    }
    // Fail fast on a wrong target instead of counting every request as an error.
    if (absl::Status ready = kserve[0]->CheckReady(spec.deadline); !ready.ok()) return ready;
    LoadRun run(spec, {}, std::move(kserve), std::move(payload));
    return run.Execute(progress);
  }
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < std::max(1, spec.connections); ++i) {
    myops::client::ClientOptions options;
    options.target = spec.target;
    options.load_balancing = spec.load_balancing;
    options.health_checking = spec.health_checking;
    options.default_deadline = spec.deadline;
    options.max_message_bytes = 1 << 30;
    options.auth_token = spec.auth_token;
    options.shared_memory = spec.shared_memory ? myops::client::SharedMemoryMode::kOn
                                               : myops::client::SharedMemoryMode::kOff;
    // Separate channels even to the same target (gRPC would otherwise share a subchannel).
    options.int_channel_args["grpc.channel_id"] = i;
    auto client = Client::Create(options);
    if (!client.ok()) return client.status();
    clients.push_back(std::move(*client));
  }
  // Fail fast on a wrong target (or an op it does not serve) instead of counting every
  // request as an error.
  if (spec.op_values != nullptr) {
    absl::Status served = CheckServed(*clients[0], spec.op);
    if (!served.ok()) return served;
  } else {
    auto info = clients[0]->GetServerInfo();
    if (!info.ok()) return info.status();
  }
  LoadRun run(spec, std::move(clients), {}, std::move(payload));
  return run.Execute(progress);
}

}  // namespace myops::loadtest
