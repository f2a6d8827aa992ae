// Where the unary RPCs with tensors (ModelInfer, ScaleShift, Call) parse a request
// (Executor::Prepare): one whose tensor data is over --inline-max-bytes is parsed and
// computed on a CPU worker, so that gRPC's callback thread, which reads every connection,
// is not held by its parse and copies; a smaller one stays on that thread. The real
// server in-process with the real executor, wrapped to see where each preparation runs.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <pthread.h>

#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "kserve/v2/grpc_predict_v2.grpc.pb.h"
#include "myops/v1/myops.grpc.pb.h"
#include "test_server.h"

namespace myops::server {
namespace {

// The real executor; records each preparation's input bytes and the name of the thread
// it ran on.
class PrepareRecorder final : public Executor {
 public:
  struct Seen {
    int64_t input_bytes;
    std::string thread;
  };
  explicit PrepareRecorder(std::unique_ptr<Executor> real) : real_(std::move(real)) {}
  const DeviceSet& devices() const override { return real_->devices(); }
  const RuntimeInfo& info() const override { return real_->info(); }
  void Submit(Job job, JobDone done) override { real_->Submit(std::move(job), std::move(done)); }
  void Prepare(int64_t input_bytes, int64_t* waited_ns, std::function<void()> prepare) override {
    real_->Prepare(input_bytes, waited_ns, [this, input_bytes, prepare = std::move(prepare)] {
      char name[16] = {};
      pthread_getname_np(pthread_self(), name, sizeof name);
      {
        std::lock_guard<std::mutex> lock(mu_);
        seen_.push_back({input_bytes, name});
      }
      prepare();
    });
  }
  void Shutdown() override { real_->Shutdown(); }
  std::vector<Seen> seen() {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_;
  }

 private:
  std::unique_ptr<Executor> real_;
  std::mutex mu_;
  std::vector<Seen> seen_;
};

// x for `n` elements: 0, 1, ..., 999, 0, 1, ...
std::vector<float> Input(int64_t n) {
  std::vector<float> x(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) x[static_cast<size_t>(i)] = static_cast<float>(i % 1000);
  return x;
}

// Checks that `out` holds 2 * x + 1.
void ExpectScaleShifted(const std::vector<float>& x, const std::string& out) {
  ASSERT_EQ(out.size(), x.size() * sizeof(float));
  for (size_t i = 0; i < x.size(); ++i) {
    float y;
    std::memcpy(&y, out.data() + i * sizeof(float), sizeof y);
    ASSERT_EQ(y, 2.0f * x[i] + 1.0f) << "element " << i;
  }
}

// myops.v1 ScaleShift, then Call, of scale_shift(x, 2, 1) for `n` elements; checks both.
void ScaleShiftAndCall(myops::v1::Myops::Stub& stub, int64_t n) {
  const std::vector<float> x = Input(n);
  const std::string data(reinterpret_cast<const char*>(x.data()), x.size() * sizeof(float));
  {
    myops::v1::ScaleShiftRequest request;
    request.mutable_input()->set_dtype(myops::v1::DTYPE_FLOAT32);
    request.mutable_input()->add_shape(n);
    request.mutable_input()->set_data(data);
    request.set_alpha(2.0);
    request.set_beta(1.0);
    grpc::ClientContext ctx;
    myops::v1::ScaleShiftResponse response;
    const grpc::Status status = stub.ScaleShift(&ctx, request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    ExpectScaleShifted(x, response.output().data());
  }
  myops::v1::CallRequest request;
  request.set_op("myops::scale_shift");
  auto* t = request.add_arguments()->mutable_value()->mutable_tensor();
  t->set_dtype(myops::v1::DTYPE_FLOAT32);
  t->add_shape(n);
  t->set_data(data);
  request.add_arguments()->mutable_value()->set_float_value(2.0);
  request.add_arguments()->mutable_value()->set_float_value(1.0);
  grpc::ClientContext ctx;
  myops::v1::CallResponse response;
  const grpc::Status status = stub.Call(&ctx, request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(response.outputs_size(), 1);
  ExpectScaleShifted(x, response.outputs(0).tensor().data());
}

// The server with the recorder, inline runs up to 64 KiB.
struct RecordedServer {
  testing::TestServer t;
  PrepareRecorder* rec = nullptr;
};
RecordedServer Start() {
  auto options = testing::LoopbackOptions();
  options.executor.inline_max_bytes = 64 << 10;
  auto real = Executor::Create(options.executor);
  EXPECT_TRUE(real.ok()) << real.status();
  if (!real.ok()) return {};
  auto recorder = std::make_unique<PrepareRecorder>(std::move(*real));
  RecordedServer s;
  s.rec = recorder.get();
  s.t = testing::StartServer(options, std::move(recorder));
  return s;
}

// ModelInfer of scale_shift(x, 2, 1) for `n` elements (Input); checks the output.
void Infer(inference::GRPCInferenceService::Stub& stub, int64_t n) {
  const std::vector<float> x = Input(n);
  inference::ModelInferRequest request;
  request.set_model_name("myops::scale_shift");
  auto* in = request.add_inputs();
  in->set_name("x");
  in->set_datatype("FP32");
  in->add_shape(n);
  request.add_raw_input_contents(x.data(), x.size() * sizeof(float));
  (*request.mutable_parameters())["alpha"].set_double_param(2.0);
  (*request.mutable_parameters())["beta"].set_double_param(1.0);
  grpc::ClientContext ctx;
  inference::ModelInferResponse response;
  const grpc::Status status = stub.ModelInfer(&ctx, request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(response.raw_output_contents_size(), 1);
  ExpectScaleShifted(x, response.raw_output_contents(0));
}

TEST(PrepareTest, LargeModelInfersAreParsedOnAWorkerSmallOnesOnGrpcsThread) {
  RecordedServer s = Start();
  ASSERT_TRUE(s.t.server);
  auto stub = inference::GRPCInferenceService::NewStub(s.t.channel);
  Infer(*stub, 16 << 10);  // 64 KiB: at the limit, inline
  Infer(*stub, (16 << 10) + 1);
  Infer(*stub, 1 << 20);  // 4 MiB
  const std::vector<PrepareRecorder::Seen> seen = s.rec->seen();
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].input_bytes, 64 << 10);
  EXPECT_EQ(seen[0].thread, "grpc-callback");
  EXPECT_EQ(seen[1].input_bytes, (64 << 10) + 4);
  EXPECT_EQ(seen[2].input_bytes, 4 << 20);
  for (size_t i : {1, 2}) {
    EXPECT_NE(seen[i].thread, "grpc-callback") << "request " << i << " was parsed on gRPC's thread";
  }
}

TEST(PrepareTest, LargeScaleShiftsAndCallsAreParsedOnAWorkerSmallOnesOnGrpcsThread) {
  RecordedServer s = Start();
  ASSERT_TRUE(s.t.server);
  ScaleShiftAndCall(*s.t.stub, 16 << 10);
  ScaleShiftAndCall(*s.t.stub, 1 << 20);
  const std::vector<PrepareRecorder::Seen> seen = s.rec->seen();
  ASSERT_EQ(seen.size(), 4u);  // ScaleShift, Call; ScaleShift, Call
  for (size_t i : {0, 1}) {
    EXPECT_EQ(seen[i].input_bytes, 64 << 10) << "request " << i;
    EXPECT_EQ(seen[i].thread, "grpc-callback") << "request " << i;
  }
  for (size_t i : {2, 3}) {
    EXPECT_EQ(seen[i].input_bytes, 4 << 20) << "request " << i;
    EXPECT_NE(seen[i].thread, "grpc-callback") << "request " << i << " was parsed on gRPC's thread";
  }
}

}  // namespace
}  // namespace myops::server
