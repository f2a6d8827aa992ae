// The load generator: closed loop (a fixed number of requests in flight) or open loop (a
// fixed arrival rate, constant or Poisson, with latency measured from each request's
// intended send time so a slow server cannot hide queueing: no coordinated omission).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "call_args.h"
#include "histogram.h"
#include "kserve_client.h"
#include "myops/client/client.h"

namespace myops::loadtest {

// Which service the load goes to: myops.v1 (ScaleShift, or Call with --op) or the Open
// Inference Protocol's ModelInfer of myops::scale_shift (kserve_client.h).
enum class Protocol { kMyops, kKServe };

struct LoadSpec {
  std::string target = "localhost:50051";  // may resolve to many replicas (dns:///..., ipv4:)
  Protocol protocol = Protocol::kMyops;
  KServeScalars kserve_scalars = KServeScalars::kParameters;
  myops::client::LoadBalancing load_balancing = myops::client::LoadBalancing::kRoundRobin;
  bool health_checking = false;  // skip replicas whose health is not SERVING (round_robin)
  int connections = 1;           // gRPC channels; workers/requests are spread over them
  int concurrency = 1;           // closed loop: requests in flight
  double rate = 0;               // open loop when > 0: requests per second
  bool poisson = false;          // open loop: exponential inter-arrival times
  bool streaming = false;        // closed loop over ScaleShiftStream instead of unary calls
  // Closed loop: how the requests in flight are kept there. kThreads: one thread per
  // request in flight, each making blocking calls and polling gRPC itself. kCallbacks:
  // asynchronous calls, each started by the completion of the one before it, all the
  // client's work on gRPC's callback threads (myops/common/callback_threads.h, one here):
  // less client CPU per request, which matters where the client shares the server's cores.
  enum class Driver { kThreads, kCallbacks } driver = Driver::kThreads;
  bool shared_memory = false;  // tensors through shared memory (SharedMemoryMode::kOn)
  // --op: the generic Call of this operator with these arguments (call_args.h syntax,
  // parsed into op_values) instead of scale_shift of dtype/shape.
  std::string op;
  std::vector<std::string> op_args;
  std::shared_ptr<const myops::cli::CallArgs> op_values;  // shared by the points of a sweep
  myops::client::DType dtype = myops::client::DType::kFloat32;
  std::vector<int64_t> shape = {256};
  std::string device;
  std::string auth_token;  // Bearer token sent on every call; "" = none
  std::chrono::milliseconds deadline{10000};
  std::chrono::milliseconds warmup{1000};
  std::chrono::milliseconds window{5000};  // one measurement window
  int64_t max_requests = 0;                // > 0: stop each window after this many requests
  int64_t min_requests = 0;  // a timed window also waits for this many (0: max(5, concurrency))
  int max_windows = 1;       // > 1: repeat windows until throughput is stable
  double stability = 0.10;   // consecutive windows' throughput within this fraction
};

// What one window (or a merge of windows) measured.
struct Stats {
  double seconds = 0;
  int64_t ok = 0;
  int64_t payload_bytes = 0;              // request + response tensor bytes of successful requests
  std::map<std::string, int64_t> errors;  // by status code name
  // Successful requests by the replica that served them (Timing::replica: the server's
  // --replica-name); "" for servers that send no name.
  std::map<std::string, int64_t> replicas;
  Histogram latency;  // ns, client-observed
  // ns, from response timing (empty for --protocol kserve: its responses carry none).
  Histogram decode, queue, compute, encode, server_total;

  int64_t error_count() const;
  double throughput() const { return seconds > 0 ? static_cast<double>(ok) / seconds : 0; }
  void Merge(const Stats& other);
};

struct RunResult {
  Stats total;  // all measured windows merged
  std::vector<double> window_throughput;
  bool stable = true;  // false: max_windows reached without agreement
};

// Called about once a second with what the current window has measured so far.
using ProgressFn = std::function<void(const Stats& so_far, bool warmup)>;

// --op: bytes of the tensors among spec.op_values (0 without --op).
int64_t ArgumentBytes(const LoadSpec& spec);

// Runs warmup, then measurement windows. Errors of individual requests are counted, not
// returned; the status is an error only when the run cannot start (e.g. bad target).
absl::StatusOr<RunResult> Run(const LoadSpec& spec, const ProgressFn& progress);

}  // namespace myops::loadtest
