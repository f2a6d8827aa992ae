// myops-latency: round-trip latency of ScaleShift at concurrency 1, for several targets
// side by side (e.g. myops-server and the echo server), per payload size. Calls to the
// targets are interleaved (each round starting at the next target) so machine noise hits
// all of them alike. Prints a table with
// each target's p50 relative to the best p50 of the baseline targets, and writes JSON.
// A --call-target sends the same work through the generic Call of myops::scale_shift
// (its result decoded into an owned tensor) instead of the typed ScaleShiftInto; a
// --kserve-target through the Open Inference Protocol's ModelInfer (raw contents, alpha
// and beta as parameters; bench/loadtest/kserve_client.h).
//
//   myops-latency --target myops=127.0.0.1:50051 --target echo=127.0.0.1:50052 \
//                 --baseline echo --sizes 1KiB,1MiB,16MiB,64MiB --json out.json
//   myops-latency --target scale_shift=ADDR --call-target call=ADDR --baseline scale_shift
//   myops-latency --target scale_shift=ADDR --kserve-target kserve=ADDR --baseline scale_shift
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "kserve_client.h"
#include "myops/client/client.h"

namespace {

using myops::client::Client;
using myops::loadtest::KServeClient;

enum class Kind { kScaleShift, kCall, kKServe };

struct Target {
  std::string name, address;
  std::unique_ptr<Client> client;
  Kind kind = Kind::kScaleShift;
  std::unique_ptr<KServeClient> kserve;  // Kind::kKServe
  KServeClient::SendBuffer send_buffer;
  std::vector<double> micros;  // per size, refilled
};

// One request of `target`'s kind; the status of the round trip.
absl::Status RoundTrip(Target& target, const myops::client::TensorView& x,
                       const myops::client::MutableTensorView& y) {
  if (target.kind == Kind::kScaleShift) {
    return target.client->ScaleShiftInto(x, 2.0, 1.0, y).status();
  }
  if (target.kind == Kind::kKServe) {
    return target.kserve->Infer(x, 2.0, 1.0, y, &target.send_buffer, std::chrono::seconds(120));
  }
  const myops::client::Value args[] = {x, 2.0, 1.0};
  auto r = target.client->Call("myops::scale_shift", args, {});
  if (!r.ok()) return r.status();
  if (r->outputs.size() != 1 || r->outputs[0].kind() != myops::client::Value::Kind::kTensor ||
      r->outputs[0].tensor().size_bytes != x.size_bytes) {
    return absl::InternalError("myops::scale_shift returned something else than x's shape");
  }
  return absl::OkStatus();
}

bool ParseSize(const std::string& text, int64_t* bytes) {
  static const std::vector<std::pair<std::string, int64_t>> units = {
      {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}};
  for (const auto& [suffix, scale] : units) {
    if (text.size() > suffix.size() &&
        text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0) {
      int64_t n;
      if (!absl::SimpleAtoi(text.substr(0, text.size() - suffix.size()), &n)) return false;
      *bytes = n * scale;
      return true;
    }
  }
  return absl::SimpleAtoi(text, bytes);
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i =
      std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5));
  return v[i];
}

}  // namespace

int main(int argc, char** argv) {
  // Debian's abseil checks every absl::Mutex lock (gRPC's included) for deadlock cycles:
  // a debug aid costing several % of CPU per call (bench/README.md). Off, as in myops-server.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  CLI::App app{
      "myops-latency: ScaleShift round-trip latency at concurrency 1, targets side by side"};
  std::vector<std::string> target_specs, call_target_specs, kserve_target_specs,
      size_specs = {"1KiB", "1MiB", "16MiB", "64MiB"};
  std::string baseline = "echo", json_path;
  int64_t max_requests = 2000, budget_bytes = int64_t{1} << 30;
  int warmup = 3;
  app.add_option("--target", target_specs, "NAME=HOST:PORT, called with ScaleShift (repeat)");
  app.add_option("--call-target", call_target_specs,
                 "NAME=HOST:PORT, called with the generic Call of myops::scale_shift (repeat)");
  app.add_option("--kserve-target", kserve_target_specs,
                 "NAME=HOST:PORT, called with KServe ModelInfer of myops::scale_shift (repeat)");
  app.add_option("--baseline", baseline, "Targets whose name starts with this are the floor")
      ->capture_default_str();
  app.add_option("--sizes", size_specs, "Payload sizes (B, KiB, MiB, GiB)")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--max-requests", max_requests, "Requests per target and size, at most")
      ->capture_default_str();
  app.add_option("--budget-bytes", budget_bytes,
                 "Requests per target and size = min(max, budget / size), at least 10")
      ->capture_default_str();
  app.add_option("--warmup", warmup, "Untimed requests per target and size")->capture_default_str();
  app.add_option("--json", json_path, "Write the results here");
  CLI11_PARSE(app, argc, argv);

  std::vector<std::pair<std::string, Kind>> specs;  // (NAME=HOST:PORT, kind)
  for (const auto& spec : target_specs) specs.emplace_back(spec, Kind::kScaleShift);
  for (const auto& spec : call_target_specs) specs.emplace_back(spec, Kind::kCall);
  for (const auto& spec : kserve_target_specs) specs.emplace_back(spec, Kind::kKServe);
  if (specs.empty()) {
    std::fprintf(stderr, "give at least one --target, --call-target or --kserve-target\n");
    return 2;
  }
  std::vector<Target> targets;
  for (const auto& [spec, kind] : specs) {
    std::vector<std::string> parts = absl::StrSplit(spec, absl::MaxSplits('=', 1));
    if (parts.size() != 2) {
      std::fprintf(stderr, "--target %s: expected NAME=HOST:PORT\n", spec.c_str());
      return 2;
    }
    myops::client::ClientOptions options;
    options.target = parts[1];
    options.max_message_bytes = 1 << 30;
    options.default_deadline = std::chrono::seconds(120);
    auto client = Client::Create(options);
    if (!client.ok()) {
      std::fprintf(stderr, "%s: %s\n", spec.c_str(),
                   std::string(client.status().message()).c_str());
      return 1;
    }
    Target target{parts[0], parts[1], std::move(*client), kind, nullptr, {}, {}};
    if (kind == Kind::kKServe) {
      myops::loadtest::KServeOptions kserve_options;
      kserve_options.target = parts[1];
      auto kserve = KServeClient::Create(kserve_options);
      if (!kserve.ok()) {
        std::fprintf(stderr, "%s: %s\n", spec.c_str(),
                     std::string(kserve.status().message()).c_str());
        return 1;
      }
      target.kserve = std::move(*kserve);
    }
    targets.push_back(std::move(target));
  }

  std::string json = "{\n  \"benchmark\": \"latency\", \"concurrency\": 1, \"baseline\": \"" +
                     baseline + "\",\n  \"results\": [";
  std::printf("%-8s %-14s %8s %10s %10s %10s %9s\n", "size", "target", "requests", "p50 us",
              "p90 us", "min us", "p50/base");
  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  bool first_row = true;
  for (const auto& size_spec : size_specs) {
    int64_t bytes = 0;
    if (!ParseSize(size_spec, &bytes) || bytes < 4) {
      std::fprintf(stderr, "bad size %s\n", size_spec.c_str());
      return 2;
    }
    const int64_t numel = bytes / 4;
    std::vector<float> input(static_cast<size_t>(numel)), output(input.size());
    for (auto& v : input) v = normal(rng);
    myops::client::TensorView x{
        myops::client::DType::kFloat32, {numel}, input.data(), input.size() * 4};
    myops::client::MutableTensorView y{
        myops::client::DType::kFloat32, {numel}, output.data(), output.size() * 4};
    const int64_t n = std::max<int64_t>(10, std::min(max_requests, budget_bytes / bytes));
    for (auto& t : targets) {
      t.micros.clear();
      for (int i = 0; i < warmup; ++i) (void)RoundTrip(t, x, y);
    }
    // Each round starts at the next target, so that every target follows every other
    // equally often (a request's cost depends on what the server and the machine did just
    // before: the previous request's clean-up overlaps it).
    for (int64_t i = 0; i < n; ++i) {
      for (size_t k = 0; k < targets.size(); ++k) {
        Target& t = targets[(static_cast<size_t>(i) + k) % targets.size()];
        const auto start = std::chrono::steady_clock::now();
        const absl::Status r = RoundTrip(t, x, y);
        const auto end = std::chrono::steady_clock::now();
        if (!r.ok()) {
          std::fprintf(stderr, "%s: %s\n", t.name.c_str(), std::string(r.message()).c_str());
          return 1;
        }
        t.micros.push_back(std::chrono::duration<double, std::micro>(end - start).count());
      }
    }
    double base = std::numeric_limits<double>::infinity();
    for (auto& t : targets)
      if (t.name.rfind(baseline, 0) == 0) base = std::min(base, Percentile(t.micros, 0.5));
    for (auto& t : targets) {
      const double p50 = Percentile(t.micros, 0.5), p90 = Percentile(t.micros, 0.9);
      const double mn = *std::min_element(t.micros.begin(), t.micros.end());
      std::printf("%-8s %-14s %8lld %10.1f %10.1f %10.1f %8.2fx\n", size_spec.c_str(),
                  t.name.c_str(), static_cast<long long>(n), p50, p90, mn, p50 / base);
      json += absl::StrFormat(
          "%s\n    {\"size\": \"%s\", \"bytes\": %d, \"target\": \"%s\", \"requests\": %d, "
          "\"p50_us\": %.3f, \"p90_us\": %.3f, \"min_us\": %.3f, \"p50_vs_best_baseline\": %.4f}",
          first_row ? "" : ",", size_spec, bytes, t.name, n, p50, p90, mn, p50 / base);
      first_row = false;
    }
  }
  json += "\n  ]\n}\n";
  if (!json_path.empty()) {
    std::ofstream(json_path) << json;
    std::printf("wrote %s\n", json_path.c_str());
  }
  return 0;
}
