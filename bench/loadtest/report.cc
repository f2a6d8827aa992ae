// Load-test reports (see report.h).
#include "report.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace myops::loadtest {
namespace {

constexpr double kQuantiles[] = {0.5, 0.9, 0.95, 0.99, 0.999};
constexpr const char* kQuantileNames[] = {"p50", "p90", "p95", "p99", "p99_9"};

double Us(int64_t ns) { return static_cast<double>(ns) / 1000.0; }

std::string JsonEscape(absl::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      absl::StrAppendFormat(&out, "\\u%04x", c);
    } else {
      out += c;
    }
  }
  return out;
}

std::string Mode(const LoadSpec& s) {
  if (s.rate > 0) return absl::StrFormat("rate %g/s%s", s.rate, s.poisson ? " poisson" : "");
  return absl::StrCat("conc ", s.concurrency, s.streaming ? " stream" : "");
}

std::string Breakdown(const char* name, const Histogram& h) {
  return absl::StrFormat("\"%s\": {\"mean_us\": %.3f, \"p99_us\": %.3f}", name, h.mean() / 1000,
                         Us(h.Percentile(0.99)));
}

// The JSON fields naming what each request computes: dtype and shape of scale_shift, or
// the op and its arguments as given (--op, --arg).
std::string WhatRuns(const LoadSpec& s) {
  if (s.op_values == nullptr) {
    return absl::StrFormat("\"dtype\": \"%s\", \"shape\": [%s]", myops::client::DTypeName(s.dtype),
                           absl::StrJoin(s.shape, ", "));
  }
  std::vector<std::string> args;
  for (const std::string& a : s.op_args) args.push_back(absl::StrCat("\"", JsonEscape(a), "\""));
  return absl::StrFormat("\"op\": \"%s\", \"args\": [%s]", JsonEscape(s.op),
                         absl::StrJoin(args, ", "));
}

}  // namespace

int64_t PayloadBytes(const LoadSpec& spec) {
  if (spec.op_values != nullptr) return ArgumentBytes(spec);
  int64_t n = 1;
  for (int64_t d : spec.shape) n *= d;
  return n * static_cast<int64_t>(myops::client::DTypeItemSize(spec.dtype));
}

std::string SizeString(int64_t bytes) {
  if (bytes >= (1 << 20) && bytes % (1 << 20) == 0) return absl::StrCat(bytes >> 20, " MiB");
  if (bytes >= (1 << 10) && bytes % (1 << 10) == 0) return absl::StrCat(bytes >> 10, " KiB");
  return absl::StrCat(bytes, " B");
}

std::string ProgressLine(const LoadSpec& spec, const Stats& s, bool warmup) {
  return absl::StrFormat("%s %-14s %6.1fs %10.1f req/s  p50 %9.1f us  p99 %9.1f us  errors %d",
                         warmup ? "warmup " : "measure", Mode(spec), s.seconds, s.throughput(),
                         Us(s.latency.Percentile(0.5)), Us(s.latency.Percentile(0.99)),
                         s.error_count());
}

std::string ReplicaLine(const Stats& s) {
  if (s.replicas.empty() || (s.replicas.size() == 1 && s.replicas.begin()->first.empty())) {
    return "";
  }
  int64_t total = 0;
  for (const auto& [name, count] : s.replicas) total += count;
  const double mean = static_cast<double>(total) / static_cast<double>(s.replicas.size());
  double deviation = 0;
  std::vector<std::string> parts;
  for (const auto& [name, count] : s.replicas) {
    parts.push_back(absl::StrFormat("%s %d (%.1f%%)", name.empty() ? "(unnamed)" : name, count,
                                    100.0 * static_cast<double>(count) / total));
    deviation = std::max(deviation, std::abs(static_cast<double>(count) - mean) / mean);
  }
  return absl::StrFormat("%s | max deviation from the mean %.1f%%", absl::StrJoin(parts, ", "),
                         100 * deviation);
}

std::string Table(const std::vector<Point>& points) {
  std::string out = absl::StrFormat("%-20s %-8s %10s %8s %9s %9s %9s %9s %9s %9s %7s %s\n", "mode",
                                    "payload", "req/s", "GB/s", "p50 us", "p90 us", "p99 us",
                                    "p99.9 us", "max us", "errors", "stable", "");
  for (const auto& p : points) {
    const Stats& s = p.result.total;
    out += absl::StrFormat(
        "%-20s %-8s %10.1f %8.3f %9.1f %9.1f %9.1f %9.1f %9.1f %9d %7s\n", Mode(p.spec),
        SizeString(PayloadBytes(p.spec)), s.throughput(),
        s.seconds > 0 ? static_cast<double>(s.payload_bytes) / s.seconds / 1e9 : 0.0,
        Us(s.latency.Percentile(0.5)), Us(s.latency.Percentile(0.9)),
        Us(s.latency.Percentile(0.99)), Us(s.latency.Percentile(0.999)), Us(s.latency.max()),
        s.error_count(), p.result.stable ? "yes" : "NO");
    for (const auto& [code, count] : s.errors) out += absl::StrFormat("    %s: %d\n", code, count);
    if (const std::string line = ReplicaLine(s); !line.empty()) {
      out += absl::StrCat("    replicas: ", line, "\n");
    }
  }
  out += "server-side breakdown (mean / p99, us):\n";
  for (const auto& p : points) {
    const Stats& s = p.result.total;
    if (p.spec.protocol == Protocol::kKServe) {
      out += absl::StrFormat(
          "%-20s %-8s none per request (KServe responses carry no timing; "
          "ModelStatistics sums the stages per model)\n",
          Mode(p.spec), SizeString(PayloadBytes(p.spec)));
      continue;
    }
    out += absl::StrFormat(
        "%-20s %-8s decode %.1f/%.1f  queue %.1f/%.1f  compute %.1f/%.1f  encode %.1f/%.1f  "
        "server total %.1f/%.1f\n",
        Mode(p.spec), SizeString(PayloadBytes(p.spec)), s.decode.mean() / 1000,
        Us(s.decode.Percentile(0.99)), s.queue.mean() / 1000, Us(s.queue.Percentile(0.99)),
        s.compute.mean() / 1000, Us(s.compute.Percentile(0.99)), s.encode.mean() / 1000,
        Us(s.encode.Percentile(0.99)), s.server_total.mean() / 1000,
        Us(s.server_total.Percentile(0.99)));
  }
  return out;
}

std::string Json(const std::vector<Point>& points) {
  std::vector<std::string> rows;
  for (const auto& p : points) {
    const Stats& s = p.result.total;
    std::vector<std::string> q, errors;
    for (size_t i = 0; i < 5; ++i) {
      q.push_back(absl::StrFormat("\"%s\": %.3f", kQuantileNames[i],
                                  Us(s.latency.Percentile(kQuantiles[i]))));
    }
    for (const auto& [code, count] : s.errors)
      errors.push_back(absl::StrFormat("\"%s\": %d", code, count));
    std::vector<std::string> replicas;  // Names are printable ASCII: escape '"' and '\\'.
    for (const auto& [name, count] : s.replicas) {
      std::string escaped;
      for (const char c : name) {
        if (c == '"' || c == '\\') escaped += '\\';
        escaped += c;
      }
      replicas.push_back(absl::StrFormat("\"%s\": %d", escaped, count));
    }
    rows.push_back(absl::StrFormat(
        "    {\"target\": \"%s\", \"protocol\": \"%s\", \"mode\": \"%s\", \"concurrency\": %d, "
        "\"rate\": %g, "
        "\"poisson\": %s, \"streaming\": %s, \"connections\": %d, %s, "
        "\"payload_bytes\": %d,\n     \"seconds\": %.4f, \"requests_ok\": %d, "
        "\"errors\": %d, \"errors_by_code\": {%s}, \"requests_by_replica\": {%s}, "
        "\"throughput_rps\": %.3f, "
        "\"payload_gb_per_s\": %.6f,\n     \"latency_us\": {%s, \"max\": %.3f, \"mean\": %.3f},\n"
        "     \"server_us\": %s,\n     \"stable\": %s, "
        "\"window_throughput_rps\": [%s]}",
        p.spec.target, p.spec.protocol == Protocol::kKServe ? "kserve" : "myops",
        p.spec.rate > 0 ? "open" : "closed", p.spec.concurrency, p.spec.rate,
        p.spec.poisson ? "true" : "false", p.spec.streaming ? "true" : "false", p.spec.connections,
        WhatRuns(p.spec), PayloadBytes(p.spec), s.seconds, s.ok, s.error_count(),
        absl::StrJoin(errors, ", "), absl::StrJoin(replicas, ", "), s.throughput(),
        s.seconds > 0 ? static_cast<double>(s.payload_bytes) / s.seconds / 1e9 : 0.0,
        absl::StrJoin(q, ", "), Us(s.latency.max()), s.latency.mean() / 1000,
        p.spec.protocol == Protocol::kKServe  // no per-request timing
            ? std::string("null")
            : absl::StrCat("{", Breakdown("decode", s.decode), ", ", Breakdown("queue", s.queue),
                           ", ", Breakdown("compute", s.compute), ", ",
                           Breakdown("encode", s.encode), ", ", Breakdown("total", s.server_total),
                           "}"),
        p.result.stable ? "true" : "false",
        absl::StrJoin(p.result.window_throughput, ", ",
                      [](std::string* o, double v) { absl::StrAppendFormat(o, "%.3f", v); })));
  }
  return absl::StrCat("{\n  \"benchmark\": \"myops-loadtest\",\n  \"points\": [\n",
                      absl::StrJoin(rows, ",\n"), "\n  ]\n}\n");
}

std::string Csv(const std::vector<Point>& points) {
  std::string out =
      "target,mode,concurrency,rate,streaming,payload_bytes,seconds,requests_ok,errors,"
      "throughput_rps,payload_gb_per_s,p50_us,p90_us,p95_us,p99_us,p99_9_us,max_us,stable\n";
  for (const auto& p : points) {
    const Stats& s = p.result.total;
    absl::StrAppendFormat(
        &out, "%s,%s,%d,%g,%d,%d,%.4f,%d,%d,%.3f,%.6f", p.spec.target,
        p.spec.rate > 0 ? "open" : "closed", p.spec.concurrency, p.spec.rate,
        p.spec.streaming ? 1 : 0, PayloadBytes(p.spec), s.seconds, s.ok, s.error_count(),
        s.throughput(),
        s.seconds > 0 ? static_cast<double>(s.payload_bytes) / s.seconds / 1e9 : 0.0);
    for (double q : kQuantiles) absl::StrAppendFormat(&out, ",%.3f", Us(s.latency.Percentile(q)));
    absl::StrAppendFormat(&out, ",%.3f,%d\n", Us(s.latency.max()), p.result.stable ? 1 : 0);
  }
  return out;
}

}  // namespace myops::loadtest
