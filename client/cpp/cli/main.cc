// myops-cli: a command-line client of a myops server, built on myops::client.
//
//   myops-cli [--target HOST:PORT] [--deadline-ms N] info
//   myops-cli health [--service NAME]
//   myops-cli scale-shift --shape 2,3 --dtype float32 --alpha 2 --beta 1 [--repeat N]
//   myops-cli scale-shift --input x.npy --output y.npy --device cuda
//   myops-cli ops
//   myops-cli call myops::scale_shift x.npy 2.0 beta=1.0 --out-prefix y
//
// Exit status: 0 on success; 1 when a call or a file fails (the status code name and
// message go to stderr); 2 from `health` when the server is not SERVING; CLI11's codes
// for bad command lines.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "call_args.h"
#include "myops/client/client.h"
#include "myops/common/dtype.h"
#include "myops/common/token_file.h"
#include "npy.h"
#include "tensor_values.h"

namespace myops::cli {
namespace {

using client::Client;
using client::Tensor;
using ::myops::DTypeInfo;
using ::myops::kDTypeTable;
using SteadyClock = std::chrono::steady_clock;

constexpr int kExitError = 1;
constexpr int kExitNotServing = 2;
constexpr int kPrintedValues = 8;

struct GlobalFlags {
  std::string target = "localhost:50051";
  int64_t deadline_ms = 30000;
  std::string tls_ca, tls_cert, tls_key, tls_server_name;  // PEM files; "" = plaintext
  std::string token_file;                                  // Bearer token; "" = none
  std::string load_balancing = "round_robin";              // Or "pick_first".
};

struct ScaleShiftFlags {
  std::string shape = "2,3";
  std::string dtype = "float32";
  double alpha = 2.0;
  double beta = 1.0;
  std::string device;
  std::string input;
  std::string output;
  uint64_t seed = 0;
  int repeat = 1;
};

struct CallFlags {
  std::string op;
  std::vector<std::string> args;
  std::string device;
  std::string out_prefix;
  uint64_t seed = 0;
};

int Fail(const absl::Status& status) {
  std::cerr << "myops-cli: " << absl::StatusCodeToString(status.code()) << ": " << status.message()
            << "\n";
  return kExitError;
}

absl::StatusOr<std::string> ReadPem(const std::string& path, const char* flag) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  if (!(in && text << in.rdbuf())) {
    return absl::NotFoundError(absl::StrCat(flag, ": cannot read \"", path, "\""));
  }
  return text.str();
}

absl::StatusOr<std::unique_ptr<Client>> Connect(const GlobalFlags& flags) {
  client::ClientOptions options;
  options.target = flags.target;
  options.default_deadline = std::chrono::milliseconds(flags.deadline_ms);
  options.load_balancing = flags.load_balancing == "pick_first"
                               ? client::LoadBalancing::kPickFirst
                               : client::LoadBalancing::kRoundRobin;
  const std::pair<const std::string*, std::string*> pems[] = {
      {&flags.tls_ca, &options.tls.root_ca_pem},
      {&flags.tls_cert, &options.tls.client_cert_pem},
      {&flags.tls_key, &options.tls.client_key_pem}};
  const char* names[] = {"--tls-ca", "--tls-cert", "--tls-key"};
  for (int i = 0; i < 3; ++i) {
    if (pems[i].first->empty()) continue;
    absl::StatusOr<std::string> pem = ReadPem(*pems[i].first, names[i]);
    if (!pem.ok()) return pem.status();
    *pems[i].second = *std::move(pem);
  }
  if (!flags.tls_server_name.empty()) {
    options.string_channel_args["grpc.ssl_target_name_override"] = flags.tls_server_name;
  }
  if (!flags.token_file.empty()) {
    absl::StatusOr<std::string> token =
        myops::common::ReadTokenFile(flags.token_file, "--token-file");
    if (!token.ok()) return token.status();
    options.auth_token = *std::move(token);
  }
  return Client::Create(options);
}

// "2,3" -> {2, 3}; "" -> {} (a 0-d tensor).
absl::StatusOr<std::vector<int64_t>> ParseShape(const std::string& text) {
  std::vector<int64_t> shape;
  if (absl::StripAsciiWhitespace(text).empty()) return shape;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    int64_t dim = 0;
    if (!absl::SimpleAtoi(part, &dim) || dim < 0) {
      return absl::InvalidArgumentError(absl::StrCat("--shape \"", text, "\": \"", part,
                                                     "\" is not a size; expected "
                                                     "comma-separated integers >= 0, e.g. 2,3"));
    }
    shape.push_back(dim);
  }
  return shape;
}

// The --dtype choices: every name in the dtype table.
std::vector<std::string> DTypeNames() {
  std::vector<std::string> names;
  for (const DTypeInfo& info : kDTypeTable) names.emplace_back(info.name);
  return names;
}

std::string Micros(int64_t ns) { return absl::StrFormat("%.1f us", ns / 1e3); }

std::string Millis(SteadyClock::duration d) {
  return absl::StrFormat("%.3f ms", std::chrono::duration<double, std::milli>(d).count());
}

std::string Describe(const client::TensorView& t) {
  return absl::StrCat(client::DTypeName(t.dtype), " ", client::ShapeToString(t.shape), " (",
                      t.size_bytes, " bytes): ", FormatValues(t, kPrintedValues));
}

void PrintTiming(const client::Timing& t) {
  std::cout << "server      " << (t.replica.empty() ? "" : "replica " + t.replica + " | ")
            << "device " << (t.device.empty() ? "?" : t.device) << " | decode "
            << Micros(t.decode_ns) << " | queue " << Micros(t.queue_ns) << " | compute "
            << Micros(t.compute_ns) << " | encode " << Micros(t.encode_ns) << " | total "
            << Micros(t.total_ns) << "\n";
}

template <typename T>
T Median(std::vector<T> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

int RunInfo(const GlobalFlags& flags) {
  absl::StatusOr<std::unique_ptr<Client>> client = Connect(flags);
  if (!client.ok()) return Fail(client.status());
  absl::StatusOr<client::ServerInfo> info = (*client)->GetServerInfo();
  if (!info.ok()) return Fail(info.status());
  std::cout << "target      " << flags.target << "\n"
            << "myops       " << info->myops_version << "\n"
            << "torch       " << info->torch_version << "\n"
            << "cuda        " << (info->cuda_version.empty() ? "-" : info->cuda_version) << "\n"
            << "workers     " << info->workers << "\n"
            << "limits      max_message_bytes " << info->limits.max_message_bytes
            << ", max_elements " << info->limits.max_elements << ", max_inflight "
            << info->limits.max_inflight << "\n";
  for (const client::DeviceInfo& device : info->devices) {
    std::cout << "device      " << device.name << ": " << device.description;
    if (device.total_memory_bytes > 0) {
      std::cout << absl::StrFormat(" (%.1f GiB)", device.total_memory_bytes / 1073741824.0);
    }
    std::cout << "\n";
  }
  for (const client::OperatorInfo& op : info->operators) {
    std::cout << "operator    " << op.name << ": " << op.schema << "\n";
  }
  return 0;
}

int RunHealth(const GlobalFlags& flags, const std::string& service) {
  absl::StatusOr<std::unique_ptr<Client>> client = Connect(flags);
  if (!client.ok()) return Fail(client.status());
  absl::StatusOr<bool> serving = (*client)->Health(service);
  if (!serving.ok()) return Fail(serving.status());
  std::cout << (*serving ? "SERVING" : "NOT_SERVING") << "\n";
  return *serving ? 0 : kExitNotServing;
}

absl::StatusOr<Tensor> MakeInput(const ScaleShiftFlags& flags) {
  if (!flags.input.empty()) return ReadNpyFile(flags.input);
  absl::StatusOr<client::DType> dtype = client::ParseDType(flags.dtype);
  if (!dtype.ok()) return dtype.status();
  absl::StatusOr<std::vector<int64_t>> shape = ParseShape(flags.shape);
  if (!shape.ok()) return shape.status();
  absl::StatusOr<Tensor> tensor = Tensor::Allocate(*dtype, *std::move(shape));
  if (!tensor.ok()) return tensor.status();
  FillRandom(flags.seed, &*tensor);
  return tensor;
}

int RunScaleShift(const GlobalFlags& global, const ScaleShiftFlags& flags) {
  absl::StatusOr<Tensor> input = MakeInput(flags);
  if (!input.ok()) return Fail(input.status());
  if (!flags.output.empty() && FindDTypeInfo(input->dtype())->numpy_str.empty()) {
    return Fail(absl::InvalidArgumentError(absl::StrCat(
        "--output: ", DTypeName(input->dtype()), " cannot be written as .npy (NumPy has no ",
        DTypeName(input->dtype()), "); use another --dtype or omit --output")));
  }
  absl::StatusOr<std::unique_ptr<Client>> client = Connect(global);
  if (!client.ok()) return Fail(client.status());
  client::CallOptions call;
  call.device = flags.device;
  const client::TensorView x = input->view();

  const SteadyClock::time_point start = SteadyClock::now();
  absl::StatusOr<client::ScaleShiftResult> result =
      (*client)->ScaleShift(x, flags.alpha, flags.beta, call);
  const SteadyClock::duration round_trip = SteadyClock::now() - start;
  if (!result.ok()) return Fail(result.status());

  std::cout << "target      " << global.target << "\n"
            << "input       " << Describe(x) << "\n"
            << "alpha, beta " << flags.alpha << ", " << flags.beta << "\n"
            << "output      " << Describe(result->output.view()) << "\n";
  PrintTiming(result->timing);
  std::cout << "round trip  " << Millis(round_trip) << "\n";

  if (flags.repeat > 1) {
    // Repeats write into the first output's buffer: no allocation per call.
    std::vector<SteadyClock::duration> round_trips{round_trip};
    std::vector<int64_t> totals{result->timing.total_ns};
    std::vector<int64_t> computes{result->timing.compute_ns};
    client::MutableTensorView out = result->output.mutable_view();
    for (int i = 1; i < flags.repeat; ++i) {
      const SteadyClock::time_point t0 = SteadyClock::now();
      absl::StatusOr<client::Timing> timing =
          (*client)->ScaleShiftInto(x, flags.alpha, flags.beta, out, call);
      round_trips.push_back(SteadyClock::now() - t0);
      if (!timing.ok()) return Fail(timing.status());
      totals.push_back(timing->total_ns);
      computes.push_back(timing->compute_ns);
    }
    std::cout << "repeat " << flags.repeat << "   round trip min "
              << Millis(*std::min_element(round_trips.begin(), round_trips.end())) << ", median "
              << Millis(Median(round_trips)) << " | server total min "
              << Micros(*std::min_element(totals.begin(), totals.end())) << ", median "
              << Micros(Median(totals)) << " | compute min "
              << Micros(*std::min_element(computes.begin(), computes.end())) << ", median "
              << Micros(Median(computes)) << "\n";
  }
  if (!flags.output.empty()) {
    if (absl::Status status = WriteNpyFile(flags.output, result->output.view()); !status.ok()) {
      return Fail(status);
    }
    std::cout << "wrote       " << flags.output << "\n";
  }
  return 0;
}

int RunOps(const GlobalFlags& flags) {
  absl::StatusOr<std::unique_ptr<Client>> client = Connect(flags);
  if (!client.ok()) return Fail(client.status());
  absl::StatusOr<std::vector<client::OperatorDescription>> ops = (*client)->ListOperators();
  if (!ops.ok()) return Fail(ops.status());
  for (const client::OperatorDescription& op : *ops) {
    std::cout << op.schema << "\n    ";
    if (op.served) {
      std::cout << "served on " << (op.devices.empty() ? "-" : absl::StrJoin(op.devices, ", "));
    } else {
      std::cout << "not served: " << op.reason;
    }
    std::cout << "\n";
  }
  std::cout << ops->size() << " operator" << (ops->size() == 1 ? "" : "s") << "\n";
  return 0;
}

// Writes the tensors among `outputs` as PREFIX<i>.npy (PREFIX<i>_<j>.npy for a tensor
// list); a tensor NumPy cannot hold (bfloat16) is an error, after the others are written.
absl::Status WriteOutputs(const std::string& prefix, const std::vector<client::Value>& outputs) {
  absl::Status first_error;
  auto write = [&](const std::string& path, const client::TensorView& t) {
    absl::Status status = WriteNpyFile(path, t);
    if (status.ok()) {
      std::cout << "wrote       " << path << "\n";
    } else if (first_error.ok()) {
      first_error = absl::Status(status.code(), absl::StrCat(path, ": ", status.message()));
    }
  };
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i].kind() == client::Value::Kind::kTensor) {
      write(absl::StrCat(prefix, i, ".npy"), outputs[i].tensor());
    } else if (outputs[i].kind() == client::Value::Kind::kTensorList) {
      const std::vector<client::TensorView> tensors = outputs[i].tensor_list();
      for (size_t j = 0; j < tensors.size(); ++j) {
        write(absl::StrCat(prefix, i, "_", j, ".npy"), tensors[j]);
      }
    }
  }
  return first_error;
}

int RunCall(const GlobalFlags& global, const CallFlags& flags) {
  absl::StatusOr<CallArgs> args = ParseCallArgs(flags.args, flags.seed);
  if (!args.ok()) return Fail(args.status());
  absl::StatusOr<std::unique_ptr<Client>> client = Connect(global);
  if (!client.ok()) return Fail(client.status());
  client::CallOptions call;
  call.device = flags.device;
  const SteadyClock::time_point start = SteadyClock::now();
  absl::StatusOr<client::CallResult> result =
      (*client)->Call(flags.op, args->positional, args->named, call);
  const SteadyClock::duration round_trip = SteadyClock::now() - start;
  if (!result.ok()) return Fail(result.status());

  std::cout << "target      " << global.target << "\n"
            << "op          " << flags.op << "\n";
  for (size_t i = 0; i < args->positional.size(); ++i) {
    std::cout << absl::StrFormat("arg %-7d ", i) << DescribeValue(args->positional[i]) << "\n";
  }
  for (const client::NamedArg& arg : args->named) {
    std::cout << absl::StrFormat("arg %-7s ", arg.name) << DescribeValue(arg.value) << "\n";
  }
  for (size_t i = 0; i < result->outputs.size(); ++i) {
    std::cout << absl::StrFormat("output %-4d ", i) << DescribeValue(result->outputs[i]) << "\n";
  }
  PrintTiming(result->timing);
  std::cout << "round trip  " << Millis(round_trip) << "\n";
  if (!flags.out_prefix.empty()) {
    if (absl::Status status = WriteOutputs(flags.out_prefix, result->outputs); !status.ok()) {
      return Fail(status);
    }
  }
  return 0;
}

int Main(int argc, char** argv) {
  CLI::App app{
      "Command-line client of a myops server: any served operator (ops, call) and "
      "scale_shift (y = alpha * x + beta)."};
  app.footer(
      "Exit status: 0 success; 1 call or file error (code and message on stderr); 2 health: "
      "not SERVING.");
  app.require_subcommand(1);
  app.fallthrough();  // Global flags may follow the subcommand too.
  GlobalFlags global;
  app.add_option("--target", global.target, "Server address (env MYOPS_TARGET)")
      ->envname("MYOPS_TARGET")
      ->capture_default_str();
  app.add_option("--deadline-ms", global.deadline_ms, "Deadline of each call, ms")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--load-balancing", global.load_balancing,
                 "How calls spread over the addresses the target resolves to (e.g. "
                 "dns:///myops-headless.NS.svc:50051 or ipv4:HOST:PORT,HOST:PORT)")
      ->check(CLI::IsMember({"round_robin", "pick_first"}))
      ->capture_default_str();
  // No environment variables: in the server's image MYOPS_TLS_* configure the server.
  app.add_option("--tls-ca", global.tls_ca, "TLS: PEM file of the CA to trust (enables TLS)");
  app.add_option("--tls-cert", global.tls_cert, "Mutual TLS: this client's PEM certificate chain");
  app.add_option("--tls-key", global.tls_key, "Mutual TLS: this client's PEM private key");
  app.add_option("--tls-server-name", global.tls_server_name,
                 "TLS: name to verify the server's certificate against instead of the target's");
  app.add_option("--token-file", global.token_file,
                 "File holding the server's bearer token (--auth-token-file), sent as "
                 "\"authorization: Bearer <token>\"");

  CLI::App* info = app.add_subcommand("info", "Print the server's versions, devices, operators");
  CLI::App* health = app.add_subcommand("health", "Standard gRPC health check");
  std::string service;
  health->add_option("--service", service, "Service name (default: the whole server)");

  CLI::App* scale_shift = app.add_subcommand("scale-shift", "Compute alpha * x + beta remotely");
  ScaleShiftFlags flags;
  CLI::Option* shape = scale_shift->add_option("--shape", flags.shape, "Input shape, e.g. 2,3")
                           ->capture_default_str();
  CLI::Option* dtype = scale_shift->add_option("--dtype", flags.dtype, "Input dtype")
                           ->check(CLI::IsMember(DTypeNames()))
                           ->capture_default_str();
  CLI::Option* seed = scale_shift->add_option("--seed", flags.seed, "Seed of the random input")
                          ->capture_default_str();
  scale_shift->add_option("--alpha", flags.alpha, "Multiplier")->capture_default_str();
  scale_shift->add_option("--beta", flags.beta, "Offset")->capture_default_str();
  scale_shift->add_option("--device", flags.device, "\"\", cpu, cuda or cuda:N");
  scale_shift
      ->add_option("--input", flags.input,
                   "Input .npy (C order; any dtype but bfloat16) instead of random data")
      ->excludes(shape)
      ->excludes(dtype)
      ->excludes(seed);
  scale_shift->add_option("--output", flags.output,
                          "Write the output as .npy (bfloat16 cannot be written)");
  scale_shift->add_option("--repeat", flags.repeat, "Calls to time (prints min/median)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();

  CLI::App* ops =
      app.add_subcommand("ops", "List the served operators: schema, devices, served or why not");
  CLI::App* call =
      app.add_subcommand("call", "Call any served operator: call OP [ARG...] (ARG syntax below)");
  call->footer(kCallArgsHelp);
  CallFlags call_flags;
  call->add_option("op", call_flags.op, "Operator, e.g. myops::scale_shift or aten::add.Tensor")
      ->required();
  // The arguments are the words CLI11 does not take, in order (as an option of its own,
  // CLI11 would split "[1,2]" and refuse "-inf"). With fallthrough they reach the app;
  // other subcommands refuse them below.
  app.allow_extras();
  call->add_option("--device", call_flags.device, "\"\", cpu, cuda or cuda:N");
  call->add_option("--out-prefix", call_flags.out_prefix,
                   "Write each output tensor as PREFIX<i>.npy (PREFIX<i>_<j>.npy in a tensor "
                   "list)");
  call->add_option("--seed", call_flags.seed, "Seed of random SHAPE:DTYPE tensors")
      ->capture_default_str();

  try {
    app.parse(argc, argv);
    if (!call->parsed() && !app.remaining().empty()) throw CLI::ExtrasError(app.remaining());
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (info->parsed()) return RunInfo(global);
  if (health->parsed()) return RunHealth(global, service);
  if (ops->parsed()) return RunOps(global);
  if (call->parsed()) {
    call_flags.args = app.remaining();
    return RunCall(global, call_flags);
  }
  return RunScaleShift(global, flags);
}

}  // namespace
}  // namespace myops::cli

int main(int argc, char** argv) { return myops::cli::Main(argc, argv); }
