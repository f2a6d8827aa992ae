// Reporting of load-test results: a human table, JSON and CSV.
#pragma once

#include <string>
#include <vector>

#include "runner.h"

namespace myops::loadtest {

// One point of a sweep: the spec it ran with and what it measured.
struct Point {
  LoadSpec spec;
  RunResult result;
};

std::string SizeString(int64_t bytes);       // "1 KiB", "16 MiB", "300 B"
int64_t PayloadBytes(const LoadSpec& spec);  // input tensor bytes

// A one-line progress update (throughput, p50/p99, errors so far).
std::string ProgressLine(const LoadSpec& spec, const Stats& so_far, bool warmup);

// "r0 1002 (33.4%), r1 998 (33.3%), ... | max deviation from the mean 0.3%": the
// successful requests of `s` per replica; "" when no server named its replica.
std::string ReplicaLine(const Stats& s);

// The table printed at the end of a run (one row per point) and the server breakdown.
std::string Table(const std::vector<Point>& points);

std::string Json(const std::vector<Point>& points);
std::string Csv(const std::vector<Point>& points);

}  // namespace myops::loadtest
