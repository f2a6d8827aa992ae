// Where ModelInfer parses a request (Executor::Prepare): a request whose tensor contents
// are over --inline-max-bytes is parsed and computed on a CPU worker, so that gRPC's
// callback thread, which reads every connection, is not held by its parse and copies; a
// smaller one stays on that thread. The real server in-process with the real executor,
// wrapped to see where each preparation runs.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <pthread.h>

#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "kserve/v2/grpc_predict_v2.grpc.pb.h"
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

// ModelInfer of scale_shift(x, 2, 1) for FP32 x of `n` elements 0, 1, 2, ...; checks the
// output.
void Infer(inference::GRPCInferenceService::Stub& stub, int64_t n) {
  std::vector<float> x(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) x[static_cast<size_t>(i)] = static_cast<float>(i % 1000);
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
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  inference::ModelInferResponse response;
  const grpc::Status status = stub.ModelInfer(&ctx, request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(response.raw_output_contents_size(), 1);
  const std::string& out = response.raw_output_contents(0);
  ASSERT_EQ(out.size(), x.size() * sizeof(float));
  for (size_t i = 0; i < x.size(); ++i) {
    float y;
    std::memcpy(&y, out.data() + i * sizeof(float), sizeof y);
    ASSERT_EQ(y, 2.0f * x[i] + 1.0f) << "element " << i;
  }
}

TEST(ModelInferPrepareTest, LargeRequestsAreParsedOnAWorkerSmallOnesOnGrpcsThread) {
  auto options = testing::LoopbackOptions();
  options.executor.inline_max_bytes = 64 << 10;
  auto real = Executor::Create(options.executor);
  ASSERT_TRUE(real.ok()) << real.status();
  auto recorder = std::make_unique<PrepareRecorder>(std::move(*real));
  PrepareRecorder* rec = recorder.get();
  auto t = testing::StartServer(options, std::move(recorder));
  ASSERT_TRUE(t.server);
  auto stub = inference::GRPCInferenceService::NewStub(t.channel);

  Infer(*stub, 16 << 10);  // 64 KiB: at the limit, inline
  Infer(*stub, (16 << 10) + 1);
  Infer(*stub, 1 << 20);  // 4 MiB
  const std::vector<PrepareRecorder::Seen> seen = rec->seen();
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].input_bytes, 64 << 10);
  EXPECT_EQ(seen[0].thread, "grpc-callback");
  EXPECT_EQ(seen[1].input_bytes, (64 << 10) + 4);
  EXPECT_EQ(seen[2].input_bytes, 4 << 20);
  for (size_t i : {1, 2}) {
    EXPECT_NE(seen[i].thread, "grpc-callback") << "request " << i << " was parsed on gRPC's thread";
  }
}

}  // namespace
}  // namespace myops::server
