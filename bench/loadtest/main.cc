// myops-loadtest: load generator for myops-server (and anything serving myops.v1, such as
// bench/echo_server). Closed loop (--concurrency, a sweep with 1,2,4,...; --driver threads
// or callbacks) or open loop (--rate, constant or --poisson), unary or --stream, over
// --connections channels, of scale_shift (--shape/--sizes, --dtype) or of any served
// operator (--op, --arg); or, with --protocol kserve, the Open Inference Protocol's
// ModelInfer of myops::scale_shift. Shows live progress on a terminal; prints a table, and
// writes --json / --csv.
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "myops/common/callback_threads.h"
#include "myops/common/dtype.h"
#include "myops/common/token_file.h"
#include "report.h"
#include "runner.h"

namespace {

using myops::loadtest::LoadSpec;

bool ParseSize(const std::string& text, int64_t* bytes) {
  static const std::pair<const char*, int64_t> kUnits[] = {
      {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}};
  for (const auto& [suffix, scale] : kUnits) {
    const std::string s(suffix);
    if (text.size() > s.size() && text.compare(text.size() - s.size(), s.size(), s) == 0) {
      int64_t n = 0;
      if (!absl::SimpleAtoi(text.substr(0, text.size() - s.size()), &n)) return false;
      *bytes = n * scale;
      return true;
    }
  }
  return absl::SimpleAtoi(text, bytes);
}

// "float32, float64, float16, bfloat16": the dtypes scale_shift computes in.
std::string FloatingDTypeNames() {
  std::string names;
  for (const myops::DTypeInfo& info : myops::kDTypeTable) {
    if (info.is_floating) absl::StrAppend(&names, names.empty() ? "" : ", ", info.name);
  }
  return names;
}

}  // namespace

int main(int argc, char** argv) {
  // Debian's abseil checks every absl::Mutex lock (gRPC's included) for deadlock cycles:
  // a debug aid costing several % of CPU per call (bench/README.md). Off, as in myops-server.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  CLI::App app{"myops-loadtest: load generator for the myops.v1 service"};
  LoadSpec base;
  std::vector<int> concurrency = {1};
  std::vector<double> rates;
  std::vector<std::string> sizes;
  std::vector<int64_t> shape = base.shape;
  std::string dtype = "float32", json_path, csv_path;
  double duration_s = 5, warmup_s = 1;
  int64_t deadline_ms = 10000;
  bool quiet = false;
  app.add_option("--target", base.target,
                 "HOST:PORT, or many replicas: dns:///NAME:PORT (a headless Service), "
                 "ipv4:HOST:PORT,HOST:PORT")
      ->envname("MYOPS_TARGET")
      ->capture_default_str();
  std::string load_balancing = "round_robin";
  app.add_option("--load-balancing", load_balancing,
                 "round_robin (each request to the next replica) | pick_first (one replica)")
      ->check(CLI::IsMember({"round_robin", "pick_first"}))
      ->capture_default_str();
  app.add_flag("--health-checking", base.health_checking,
               "round_robin: send nothing to replicas whose health is not SERVING (draining)");
  app.add_option("--concurrency", concurrency, "Requests in flight (closed loop); a list sweeps")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--rate", rates, "Requests/s (open loop); a list sweeps")->delimiter(',');
  app.add_flag("--poisson", base.poisson, "Open loop: Poisson arrivals instead of constant");
  app.add_flag("--stream", base.streaming, "Closed loop over the ScaleShiftStream RPC");
  std::string driver = "threads";
  app.add_option("--driver", driver,
                 "Closed loop: threads (one per request in flight, blocking calls) | callbacks "
                 "(asynchronous calls, each started by the last one's completion, on the "
                 "--client-threads threads)")
      ->check(CLI::IsMember({"threads", "callbacks"}))
      ->capture_default_str();
  int client_threads = 0;
  app.add_option("--client-threads", client_threads,
                 "Threads that run gRPC's callbacks (--driver callbacks, --rate); 0: one per "
                 "four hardware threads")
      ->check(CLI::Range(0, 64))
      ->capture_default_str();
  app.add_flag("--shared-memory", base.shared_memory,
               "Tensors through shared memory regions registered with the server (a server on "
               "this host, started with --allow-shared-memory; myops protocol, unary calls); "
               "without it they travel in the messages")
      ->excludes("--stream");
  std::string protocol = "myops", kserve_scalars = "parameters";
  app.add_option("--protocol", protocol,
                 "myops (myops.v1 ScaleShift, or Call with --op) | kserve (the Open Inference "
                 "Protocol's ModelInfer of myops::scale_shift, raw_input_contents)")
      ->check(CLI::IsMember({"myops", "kserve"}))
      ->capture_default_str();
  app.add_option("--kserve-scalars", kserve_scalars,
                 "--protocol kserve: alpha and beta as request parameters or as FP64 inputs")
      ->check(CLI::IsMember({"parameters", "inputs"}))
      ->capture_default_str();
  app.add_option("--connections", base.connections, "gRPC channels")->capture_default_str();
  app.add_option("--shape", shape, "Tensor shape, e.g. 256 or 64,1024")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--sizes", sizes, "Payload sizes to sweep instead of --shape (1KiB,16MiB,...)")
      ->delimiter(',');
  CLI::Option* dtype_option =
      app.add_option("--dtype", dtype, "A floating dtype of scale_shift: " + FloatingDTypeNames())
          ->capture_default_str();
  CLI::Option* op_option =
      app.add_option("--op", base.op,
                     "Load this served operator through the generic Call (with --arg) instead "
                     "of scale_shift, e.g. myops::scale_shift");
  // One word per --arg: no CLI11 splitting of "[1,2]".
  app.add_option("--arg", base.op_args,
                 "An argument of --op, repeated in order (myops-cli call's syntax: "
                 "SHAPE:DTYPE random tensor, PATH.npy, 2.0, 3, true, none, [1,2], NAME=VALUE, "
                 "...; --arg=-inf for words starting with '-')")
      ->allow_extra_args(false)
      ->needs(op_option);
  app.add_option("--device", base.device, "Device requested from the server");
  app.add_option("--duration", duration_s, "Seconds per measurement window")->capture_default_str();
  app.add_option("--requests", base.max_requests, "Requests per window (instead of --duration)");
  app.add_option("--min-requests", base.min_requests,
                 "Completions a timed window waits for, up to 20 durations "
                 "(default: max(5, concurrency))")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--warmup", warmup_s,
                 "Seconds of unrecorded warmup per point (with --stream, as long again of unary "
                 "calls first, so that every replica is connected before the streams open)")
      ->capture_default_str();
  app.add_option("--max-windows", base.max_windows,
                 "Repeat windows until two agree within --stability (at most this many)")
      ->capture_default_str();
  app.add_option("--stability", base.stability, "Throughput agreement for stability (fraction)")
      ->capture_default_str();
  app.add_option("--deadline-ms", deadline_ms, "Deadline of each request")->capture_default_str();
  std::string token_file;
  app.add_option("--token-file", token_file,
                 "File holding the server's bearer token (--auth-token-file)");
  app.add_option("--json", json_path, "Write the report as JSON");
  app.add_option("--csv", csv_path, "Write one CSV row per point");
  app.add_flag("--quiet", quiet, "No live progress");
  app.footer(myops::cli::kCallArgsHelp);
  CLI11_PARSE(app, argc, argv);
  if (!base.op.empty()) {
    for (const char* flag : {"--shape", "--sizes"}) {
      if (app.count(flag) > 0) {
        std::cerr << "myops-loadtest: " << flag << " is for scale_shift; with --op, give the "
                  << "tensors as --arg SHAPE:DTYPE\n";
        return 2;
      }
    }
    if (dtype_option->count() > 0) {
      std::cerr << "myops-loadtest: --dtype is for scale_shift; with --op, give the tensors as "
                << "--arg SHAPE:DTYPE\n";
      return 2;
    }
    auto args = myops::cli::ParseCallArgs(base.op_args, 1);
    if (!args.ok()) {
      std::cerr << "myops-loadtest: --arg: " << args.status().message() << "\n";
      return 2;
    }
    base.op_values = std::make_shared<const myops::cli::CallArgs>(*std::move(args));
  }

  auto parsed_dtype = myops::client::ParseDType(dtype);
  if (!parsed_dtype.ok()) {
    std::cerr << "--dtype: " << parsed_dtype.status().message() << "\n";
    return 2;
  }
  if (!myops::IsFloatingDType(*parsed_dtype)) {
    // scale_shift rejects the others: every request would fail.
    std::cerr << "--dtype: " << dtype << " is not accepted by scale_shift; expected one of "
              << FloatingDTypeNames() << "\n";
    return 2;
  }
  base.dtype = *parsed_dtype;
  base.driver = driver == "callbacks" ? LoadSpec::Driver::kCallbacks : LoadSpec::Driver::kThreads;
  myops::SetCallbackThreads(client_threads);  // before the first channel is created
  base.protocol =
      protocol == "kserve" ? myops::loadtest::Protocol::kKServe : myops::loadtest::Protocol::kMyops;
  if (base.shared_memory && base.protocol == myops::loadtest::Protocol::kKServe) {
    std::cerr << "--shared-memory: with --protocol myops only\n";
    return 2;
  }
  base.kserve_scalars = kserve_scalars == "inputs" ? myops::loadtest::KServeScalars::kInputs
                                                   : myops::loadtest::KServeScalars::kParameters;
  base.load_balancing = load_balancing == "pick_first" ? myops::client::LoadBalancing::kPickFirst
                                                       : myops::client::LoadBalancing::kRoundRobin;
  base.window = std::chrono::milliseconds(static_cast<int64_t>(duration_s * 1000));
  base.warmup = std::chrono::milliseconds(static_cast<int64_t>(warmup_s * 1000));
  base.deadline = std::chrono::milliseconds(deadline_ms);
  if (!token_file.empty()) {
    auto token = myops::common::ReadTokenFile(token_file, "--token-file");
    if (!token.ok()) {
      std::cerr << "myops-loadtest: " << token.status().message() << "\n";
      return 2;
    }
    base.auth_token = *std::move(token);
  }

  std::vector<std::vector<int64_t>> shapes;
  for (const auto& text : sizes) {
    int64_t bytes = 0;
    const auto item = static_cast<int64_t>(myops::client::DTypeItemSize(base.dtype));
    if (!ParseSize(text, &bytes) || bytes < item) {
      std::cerr << "--sizes: cannot parse \"" << text << "\"\n";
      return 2;
    }
    shapes.push_back({bytes / item});
  }
  if (shapes.empty()) shapes.push_back(shape);

  std::vector<LoadSpec> specs;
  for (const auto& s : shapes) {
    if (!rates.empty()) {
      for (double r : rates) {
        LoadSpec spec = base;
        spec.shape = s;
        spec.rate = r;
        specs.push_back(spec);
      }
    } else {
      for (int c : concurrency) {
        LoadSpec spec = base;
        spec.shape = s;
        spec.concurrency = c;
        specs.push_back(spec);
      }
    }
  }

  const bool live = !quiet && isatty(STDERR_FILENO);
  std::vector<myops::loadtest::Point> points;
  for (const LoadSpec& spec : specs) {
    auto progress = [&](const myops::loadtest::Stats& s, bool warmup) {
      if (live) std::fprintf(stderr, "\r%s\033[K", ProgressLine(spec, s, warmup).c_str());
    };
    auto result = myops::loadtest::Run(spec, progress);
    if (live) std::fprintf(stderr, "\r\033[K");
    if (!result.ok()) {
      std::cerr << "myops-loadtest: " << spec.target << ": " << result.status() << "\n";
      return 1;
    }
    points.push_back({spec, std::move(*result)});
  }
  std::cout << "target " << base.target << ", "
            << (base.protocol == myops::loadtest::Protocol::kKServe ? "kserve ModelInfer, " : "")
            << (base.shared_memory ? "shared memory, " : "")
            << (base.op.empty() ? dtype : "op " + base.op) << ", " << base.connections
            << " connection(s)\n"
            << myops::loadtest::Table(points);
  if (!json_path.empty()) std::ofstream(json_path) << myops::loadtest::Json(points);
  if (!csv_path.empty()) std::ofstream(csv_path) << myops::loadtest::Csv(points);
  int64_t errors = 0;
  for (const auto& p : points) errors += p.result.total.error_count();
  return errors == 0 ? 0 : 3;
}
