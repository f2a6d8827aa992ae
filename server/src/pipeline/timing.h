// A request's timing breakdown, protocol-neutral: what the pipeline hands every front end
// when a request finishes. Each front end writes it in its own protocol's form (myops.v1
// Timing, KServe statistics, metrics). Neither torch nor protobuf.
#pragma once

#include <cstdint>
#include <string>

#include "runtime/executor.h"
#include "util/clock.h"

namespace myops::server {

struct Timing {
  int64_t decode_ns = 0;   // receipt -> the job is submitted (parse, decode, bind, admit)
  int64_t queue_ns = 0;    // submitted -> a worker starts it
  int64_t compute_ns = 0;  // the operator (on CUDA: with the host copies and CUDA events)
  int64_t encode_ns = 0;   // results -> ready to send (allocation of the typed output)
  int64_t total_ns = 0;    // receipt -> ready to send
  std::string device;      // "cpu", "cuda:0", ...
};

// A successful request's Timing: its stages, the executor's share, the total from `start`.
inline Timing MakeTiming(Clock::time_point start, int64_t decode_ns, int64_t encode_ns,
                         const JobTiming& job) {
  Timing timing;
  timing.decode_ns = decode_ns;
  timing.queue_ns = job.queue_ns;
  timing.compute_ns = job.compute_ns;
  timing.encode_ns = encode_ns;
  timing.device = job.device;
  timing.total_ns = Nanos(Clock::now() - start);
  return timing;
}

}  // namespace myops::server
