// myops-pipeline-bench: the server's own CPU per request outside gRPC, front end by
// front end, in one process: ScaleShift (typed sugar), Call (generic) and ModelInfer (Open
// Inference Protocol) of myops::scale_shift, each from the received bytes to the
// response's: parse, decode, find the op, bind its arguments, run it on the real CPU
// executor (inline, as the server runs small requests), encode the result. No network,
// no thread hop: what the front ends and the runtime add to a request, which at 1 KiB is
// most of what separates the RPCs' latencies. The kinds run interleaved, round by round;
// the report is the median ns per request, whole and front end alone (no executor), and
// the ratios against ScaleShift.
//
//   myops-pipeline-bench [--bytes 1024] [--rounds 15] [--requests 2000]
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "frontends/grpc/arena_request.h"
#include "frontends/myops_v1/call_codec.h"
#include "frontends/myops_v1/codec.h"
#include "frontends/myops_v1/scale_shift.h"
#include "frontends/oip/codec.h"
#include "myops/wire/call_wire.h"
#include "runtime/executor.h"

namespace myops::server {
namespace {

using Clock = std::chrono::steady_clock;

void Check(const absl::Status& s) {
  if (!s.ok()) {
    std::fprintf(stderr, "myops-pipeline-bench: %s\n", s.ToString().c_str());
    std::exit(1);
  }
}

grpc::ByteBuffer Bytes(const google::protobuf::MessageLite& message) {
  const std::string s = message.SerializeAsString();
  grpc::Slice slice(s.data(), s.size());
  return grpc::ByteBuffer(&slice, 1);
}

// The three requests for x of `n` float32 elements, alpha 2, beta 1, as the clients send
// them (the C++ client's Call: positional arguments; its ModelInfer, as tritonclient's:
// raw contents, alpha and beta as parameters).
struct Requests {
  grpc::ByteBuffer scale_shift, call, infer;
};

Requests MakeRequests(int64_t n) {
  const std::string data(static_cast<size_t>(n) * 4, '\1');
  Requests r;
  myops::v1::ScaleShiftRequest typed;
  typed.mutable_input()->set_dtype(myops::v1::DTYPE_FLOAT32);
  typed.mutable_input()->add_shape(n);
  typed.mutable_input()->set_data(data);
  typed.set_alpha(2);
  typed.set_beta(1);
  r.scale_shift = Bytes(typed);
  myops::v1::CallRequest call;
  call.set_op("myops::scale_shift");
  myops::v1::Tensor* x = call.add_arguments()->mutable_value()->mutable_tensor();
  x->set_dtype(myops::v1::DTYPE_FLOAT32);
  x->add_shape(n);
  x->set_data(data);
  call.add_arguments()->mutable_value()->set_float_value(2);
  call.add_arguments()->mutable_value()->set_float_value(1);
  r.call = Bytes(call);
  inference::ModelInferRequest infer;
  infer.set_model_name("myops::scale_shift");
  auto* in = infer.add_inputs();
  in->set_name("x");
  in->set_datatype("FP32");
  in->add_shape(n);
  (*infer.mutable_parameters())["alpha"].set_double_param(2);
  (*infer.mutable_parameters())["beta"].set_double_param(1);
  infer.add_raw_input_contents(data);
  r.infer = Bytes(infer);
  return r;
}

// One request of each kind as the server's handlers run it, with or without the
// executor (`run`).
class Kinds {
 public:
  Kinds(const Requests& requests, Executor* executor)
      : requests_(requests),
        executor_(executor),
        registry_(*executor->info().registry),
        scale_shift_model_(Find("myops::scale_shift")) {}

  void ScaleShift(bool run) {
    ScaleShiftState state;
    Check(ParseRequest(requests_.scale_shift, &state.request, &state.input));
    Check(CheckScaleShift(limits_, &state).status());
    BindScaleShift(scale_shift_model_, &state);
    Bind(state.model, std::move(state.args), run, /*fake_result=*/false, &state.call);
    if (run) Check(TakeScaleShiftResult(&state));
    sink_ += EncodeResponse(state.request, state.output, Timing()).Length();
  }

  void Call(bool run) {
    ArenaRequest<myops::v1::CallRequest> parsed;  // as the server's state holds it
    const myops::v1::CallRequest& request = *parsed;
    Check(ParseCallRequest(requests_.call, parsed.get()));
    auto args = DecodeArguments(request, limits_);
    Check(args.status());
    OpCall call;
    Bind(Find(request.op()), std::move(*args), run, /*fake_result=*/true, &call);
    sink_ += EncodeCallResponse(call, Timing(), 0).Length();
  }

  void Infer(bool run) {
    Check(wire::CheckInferRequestHead(requests_.infer).status());
    ArenaRequest<inference::ModelInferRequest> parsed;
    const inference::ModelInferRequest& request = *parsed;
    wire::DataFieldValues raw;
    Check(kserve::ParseInferRequest(requests_.infer, parsed.get(), &raw));
    auto index = kserve::FindModel(registry_, request.model_name(), request.model_version());
    Check(index.status());
    const OpInfo& op = registry_.ops()[static_cast<size_t>(*index)];
    kserve::InferRequest decoded;
    Check(kserve::DecodeInferRequest(request, raw, op.QualifiedName(), limits_, &decoded));
    kserve::InferCall state;
    Check(kserve::BindInfer(op, OwnedRegions(), {}, &decoded, &state));
    Bind(Find(registry_.Name(*index)), std::move(state.args), run, /*fake_result=*/true,
         &state.call);
    auto outputs = kserve::InferOutputs(state);
    Check(outputs.status());
    sink_ += kserve::EncodeInferResponse(request, *outputs, state.call).Length();
  }

  size_t sink() const { return sink_; }

 private:
  int Find(const std::string& name) {
    auto index = registry_.Find(name);
    Check(index.status());
    return *index;
  }

  // Binds the arguments to op `index` into `call`; runs it (`run`), or else, for a
  // response that encodes result 0 (`fake_result`), makes it x as is.
  void Bind(int index, std::vector<NamedValue> args, bool run, bool fake_result, OpCall* call) {
    call->op = index;
    Check(BindArguments(registry_.ops()[static_cast<size_t>(index)], std::move(args), call));
    if (run) {
      Job job;
      job.call = call;
      Run(std::move(job));
      return;
    }
    if (!fake_result) return;
    const TensorView& x = call->args[0]->tensor;
    call->results.emplace_back();
    call->results[0].kind = Value::Kind::kTensor;
    call->results[0].tensor = x;
  }

  void Run(Job job) {
    absl::Status status = absl::InternalError("the executor did not run the job inline");
    executor_->Submit(std::move(job),
                      [&status](absl::Status s, const JobTiming&) { status = std::move(s); });
    Check(status);
  }

  const Requests& requests_;
  Executor* executor_;
  const OpRegistry& registry_;
  const int scale_shift_model_;
  const TensorLimits limits_;
  size_t sink_ = 0;
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace
}  // namespace myops::server

int main(int argc, char** argv) {
  CLI::App app{"myops-pipeline-bench: the server's CPU per request outside gRPC, by front end"};
  int64_t bytes = 1024;
  int rounds = 15, requests = 2000;
  app.add_option("--bytes", bytes, "Payload (x) bytes, a multiple of 4, at most 128 KiB")
      ->check(CLI::Range(int64_t{4}, int64_t{128} << 10));
  app.add_option("--rounds", rounds, "Interleaved rounds")->check(CLI::Range(1, 1000));
  app.add_option("--requests", requests, "Requests per kind and round")
      ->check(CLI::Range(1, 1 << 24));
  CLI11_PARSE(app, argc, argv);

  using namespace myops::server;
  ExecutorOptions options;
  options.devices = "cpu";
  options.cpu_workers = 1;
  options.intra_op_threads = 1;
  auto executor = Executor::Create(options);
  Check(executor.status());
  const Requests r = MakeRequests(bytes / 4);
  Kinds kinds(r, executor->get());
  struct Kind {
    const char* name;
    void (Kinds::*request)(bool);
    std::vector<double> whole, front;
  };
  std::vector<Kind> all = {{"scale_shift", &Kinds::ScaleShift, {}, {}},
                           {"call", &Kinds::Call, {}, {}},
                           {"kserve", &Kinds::Infer, {}, {}}};
  auto time = [&](Kind& k, bool run) {
    const auto t0 = Clock::now();
    for (int i = 0; i < requests; ++i) (kinds.*k.request)(run);
    return std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / requests;
  };
  for (Kind& k : all) (kinds.*k.request)(true);  // warm up
  for (int round = 0; round < rounds; ++round) {
    for (Kind& k : all) k.whole.push_back(time(k, true));
    for (Kind& k : all) k.front.push_back(time(k, false));
  }
  (*executor)->Shutdown();
  const double whole = Median(all[0].whole), front = Median(all[0].front);
  std::printf("%lld B, median ns per request over %d rounds of %d\n", static_cast<long long>(bytes),
              rounds, requests);
  std::printf("  %-12s %8s %8s %8s %8s\n", "", "whole", "ratio", "front", "ratio");
  for (const Kind& k : all) {
    std::printf("  %-12s %8.0f %7.2fx %8.0f %7.2fx\n", k.name, Median(k.whole),
                Median(k.whole) / whole, Median(k.front), Median(k.front) / front);
  }
  return kinds.sink() == 0 ? 1 : 0;
}
