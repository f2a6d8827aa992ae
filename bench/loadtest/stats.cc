// Merging and counting of myops-loadtest's measurements (see runner.h).
#include "runner.h"

namespace myops::loadtest {

int64_t Stats::error_count() const {
  int64_t n = 0;
  for (const auto& [code, count] : errors) n += count;
  return n;
}

void Stats::Merge(const Stats& o) {
  seconds += o.seconds;
  ok += o.ok;
  payload_bytes += o.payload_bytes;
  for (const auto& [code, count] : o.errors) errors[code] += count;
  latency.Merge(o.latency);
  decode.Merge(o.decode);
  queue.Merge(o.queue);
  compute.Merge(o.compute);
  encode.Merge(o.encode);
  server_total.Merge(o.server_total);
  for (const auto& [replica, count] : o.replicas) replicas[replica] += count;
}

}  // namespace myops::loadtest
