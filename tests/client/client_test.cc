// myops::client::Client against the in-process echo server: unary, into-buffer and
// asynchronous calls, ServerInfo, Health, deadlines and retries of an unreachable server.
// The echo server returns its input, so every output must equal its input byte for byte.
#include "myops/client/client.h"

#include <gmock/gmock.h>
#include <grpc/grpc.h>
#include <gtest/gtest.h>

#include <condition_variable>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "echo_test_server.h"

namespace myops::client {
namespace {

using ::testing::HasSubstr;

// Every dtype of the table (the echo server sends back whatever it receives).
std::vector<DType> AllDTypes() {
  std::vector<DType> dtypes;
  for (const ::myops::DTypeInfo& info : ::myops::kDTypeTable) dtypes.push_back(info.dtype);
  return dtypes;
}

// A tensor of the given dtype and shape filled with random bytes (any bit pattern: the
// echo server does not interpret them).
Tensor RandomTensor(DType dtype, std::vector<int64_t> shape, uint32_t seed = 1) {
  absl::StatusOr<Tensor> tensor = Tensor::Allocate(dtype, std::move(shape));
  EXPECT_TRUE(tensor.ok()) << tensor.status();
  std::mt19937 rng(seed);
  auto* bytes = static_cast<unsigned char*>(tensor->mutable_data());
  for (size_t i = 0; i < tensor->size_bytes(); ++i) bytes[i] = static_cast<unsigned char>(rng());
  return *std::move(tensor);
}

std::unique_ptr<Client> MakeClient(const std::string& target, ClientOptions options = {}) {
  options.target = target;
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Create(options);
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? *std::move(client) : nullptr;
}

class ClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.ok());
    client_ = MakeClient(server_.target());
    ASSERT_NE(client_, nullptr);
  }

  void ExpectEcho(const Tensor& input) {
    absl::StatusOr<ScaleShiftResult> result = client_->ScaleShift(input.view(), 2.0, 1.0);
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->output.dtype(), input.dtype());
    EXPECT_EQ(result->output.shape(), input.shape());
    EXPECT_EQ(result->output.bytes(), input.bytes());
    EXPECT_EQ(result->timing.device, "echo");
  }

  testing::EchoTestServer server_;
  std::unique_ptr<Client> client_;
};

TEST_F(ClientTest, UnaryRoundTripOfEveryDType) {
  for (DType dtype : AllDTypes()) {
    SCOPED_TRACE(DTypeName(dtype));
    ExpectEcho(RandomTensor(dtype, {3, 4}));
  }
}

TEST_F(ClientTest, ZeroDimTensorHasOneElement) {
  for (DType dtype : AllDTypes()) {
    Tensor scalar = RandomTensor(dtype, {});
    ASSERT_EQ(scalar.size_bytes(), DTypeItemSize(dtype));
    ExpectEcho(scalar);
  }
}

TEST_F(ClientTest, EmptyTensors) {
  ExpectEcho(RandomTensor(DType::kFloat32, {0}));
  ExpectEcho(RandomTensor(DType::kFloat64, {2, 0, 3}));
  // A view with no buffer at all is a valid empty tensor.
  absl::StatusOr<ScaleShiftResult> result =
      client_->ScaleShift(TensorView{DType::kFloat16, {5, 0}, nullptr, 0}, 1.0, 0.0);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->output.shape(), (std::vector<int64_t>{5, 0}));
  EXPECT_EQ(result->output.size_bytes(), 0u);
}

TEST_F(ClientTest, OneMiBTensor) { ExpectEcho(RandomTensor(DType::kFloat32, {256, 1024})); }

TEST_F(ClientTest, LargerThanGrpcDefaultFourMiBLimit) {
  ExpectEcho(RandomTensor(DType::kFloat64, {6, 1024, 128}));  // 6 MiB.
}

TEST_F(ClientTest, ChannelArgumentsOverrideTheMessageLimit) {
  ClientOptions options;
  options.int_channel_args[GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH] = 1024;
  auto small = MakeClient(server_.target(), options);
  Tensor x = RandomTensor(DType::kFloat32, {1024});  // a 4 KiB response
  auto result = small->ScaleShift(x.view(), 2.0, 1.0);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kResourceExhausted) << result.status();
}

TEST_F(ClientTest, ScaleShiftIntoWritesTheCallerBuffer) {
  for (DType dtype : AllDTypes()) {
    SCOPED_TRACE(DTypeName(dtype));
    Tensor x = RandomTensor(dtype, {7, 5});
    absl::StatusOr<Tensor> out = Tensor::Allocate(dtype, {7, 5});
    ASSERT_TRUE(out.ok());
    for (int i = 0; i < 3; ++i) {  // Reuses the buffer and this thread's messages.
      absl::StatusOr<Timing> timing =
          client_->ScaleShiftInto(x.view(), 2.0, 1.0, out->mutable_view());
      ASSERT_TRUE(timing.ok()) << timing.status();
      EXPECT_EQ(timing->device, "echo");
      EXPECT_EQ(out->bytes(), x.bytes());
    }
  }
}

TEST_F(ClientTest, ScaleShiftIntoMayWriteOverItsInput) {
  Tensor x = RandomTensor(DType::kFloat32, {64});
  const std::string original = x.bytes();
  absl::StatusOr<Timing> timing = client_->ScaleShiftInto(x.view(), 2.0, 1.0, x.mutable_view());
  ASSERT_TRUE(timing.ok()) << timing.status();
  EXPECT_EQ(x.bytes(), original);
}

TEST_F(ClientTest, ScaleShiftIntoRejectsAnOutputOfAnotherDType) {
  Tensor x = RandomTensor(DType::kFloat32, {2, 3});
  Tensor out = RandomTensor(DType::kFloat64, {2, 3});
  absl::StatusOr<Timing> timing = client_->ScaleShiftInto(x.view(), 2.0, 1.0, out.mutable_view());
  ASSERT_EQ(timing.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(timing.status().message(),
              HasSubstr("out: float64 of shape [2, 3] does not match the input"));
}

TEST_F(ClientTest, ScaleShiftIntoRejectsAnOutputOfAnotherShape) {
  Tensor x = RandomTensor(DType::kFloat32, {2, 3});
  Tensor out = RandomTensor(DType::kFloat32, {3, 2});
  absl::StatusOr<Timing> timing = client_->ScaleShiftInto(x.view(), 2.0, 1.0, out.mutable_view());
  ASSERT_EQ(timing.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(timing.status().message(), HasSubstr("expected the input's dtype and shape "
                                                   "(float32 of shape [2, 3])"));
}

TEST_F(ClientTest, ScaleShiftIntoRejectsAnOutputBufferOfTheWrongSize) {
  Tensor x = RandomTensor(DType::kFloat32, {2, 3});
  std::vector<char> small(20);
  MutableTensorView out{DType::kFloat32, {2, 3}, small.data(), small.size()};
  absl::StatusOr<Timing> timing = client_->ScaleShiftInto(x.view(), 2.0, 1.0, out);
  ASSERT_EQ(timing.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(timing.status().message(), HasSubstr("out: size_bytes is 20; expected 24"));
}

// Collects the results of asynchronous calls.
class Results {
 public:
  Client::ScaleShiftCallback Callback(int index) {
    return [this, index](absl::StatusOr<ScaleShiftResult> result) {
      std::lock_guard<std::mutex> lock(mu_);
      results_[index] = std::move(result);
      ++done_;
      cv_.notify_all();
    };
  }
  explicit Results(int n) : results_(n, absl::UnknownError("not done")) {}
  std::vector<absl::StatusOr<ScaleShiftResult>>& Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return done_ == static_cast<int>(results_.size()); });
    return results_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int done_ = 0;
  std::vector<absl::StatusOr<ScaleShiftResult>> results_;
};

TEST_F(ClientTest, AsyncCallsCompleteWithTheirOwnResults) {
  constexpr int kCalls = 20;
  std::vector<Tensor> inputs;
  for (int i = 0; i < kCalls; ++i) {
    inputs.push_back(
        RandomTensor(AllDTypes()[i % ::myops::kNumDTypes], {i % 5, 3}, static_cast<uint32_t>(i)));
  }
  Results results(kCalls);
  for (int i = 0; i < kCalls; ++i) {
    client_->ScaleShiftAsync(inputs[i].view(), 2.0, 1.0, results.Callback(i));
  }
  std::vector<absl::StatusOr<ScaleShiftResult>>& done = results.Wait();
  for (int i = 0; i < kCalls; ++i) {
    ASSERT_TRUE(done[i].ok()) << i << ": " << done[i].status();
    EXPECT_EQ(done[i]->output.dtype(), inputs[i].dtype());
    EXPECT_EQ(done[i]->output.shape(), inputs[i].shape());
    EXPECT_EQ(done[i]->output.bytes(), inputs[i].bytes());
  }
}

TEST_F(ClientTest, AsyncCopiesTheInputBeforeReturning) {
  Tensor x = RandomTensor(DType::kFloat32, {1024});
  const std::string original = x.bytes();
  Results results(1);
  client_->ScaleShiftAsync(x.view(), 2.0, 1.0, results.Callback(0));
  std::memset(x.mutable_data(), 0, x.size_bytes());  // The caller reuses its buffer at once.
  std::vector<absl::StatusOr<ScaleShiftResult>>& done = results.Wait();
  ASSERT_TRUE(done[0].ok()) << done[0].status();
  EXPECT_EQ(done[0]->output.bytes(), original);
}

TEST_F(ClientTest, AsyncReportsInvalidInputBeforeReturning) {
  bool called = false;
  absl::Status status;
  client_->ScaleShiftAsync(TensorView{DType::kFloat32, {-1}, nullptr, 0}, 2.0, 1.0,
                           [&](absl::StatusOr<ScaleShiftResult> result) {
                             called = true;
                             status = result.status();
                           });
  EXPECT_TRUE(called);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(ClientTest, AsyncCallOutlivesTheClient) {
  Tensor x = RandomTensor(DType::kFloat32, {16});
  Results results(1);
  client_->ScaleShiftAsync(x.view(), 2.0, 1.0, results.Callback(0));
  client_.reset();
  std::vector<absl::StatusOr<ScaleShiftResult>>& done = results.Wait();
  ASSERT_TRUE(done[0].ok()) << done[0].status();
  EXPECT_EQ(done[0]->output.bytes(), x.bytes());
}

TEST_F(ClientTest, ServerInfoDescribesTheEchoServer) {
  absl::StatusOr<ServerInfo> info = client_->GetServerInfo();
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->myops_version, "echo");
  ASSERT_EQ(info->devices.size(), 1u);
  EXPECT_EQ(info->devices[0].name, "cpu");
  ASSERT_EQ(info->operators.size(), 1u);
  EXPECT_EQ(info->operators[0].name, "myops::scale_shift");
  EXPECT_EQ(info->limits.max_message_bytes, testing::EchoTestServer::kMaxMessageBytes);
}

TEST_F(ClientTest, HealthOfTheWholeServerIsServing) {
  absl::StatusOr<bool> serving = client_->Health();
  ASSERT_TRUE(serving.ok()) << serving.status();
  EXPECT_TRUE(*serving);
}

TEST_F(ClientTest, HealthOfANamedService) {
  server_.health()->SetServingStatus("myops.v1.Myops", true);
  absl::StatusOr<bool> serving = client_->Health("myops.v1.Myops");
  ASSERT_TRUE(serving.ok()) << serving.status();
  EXPECT_TRUE(*serving);

  server_.health()->SetServingStatus("myops.v1.Myops", false);
  serving = client_->Health("myops.v1.Myops");
  ASSERT_TRUE(serving.ok()) << serving.status();
  EXPECT_FALSE(*serving);
}

TEST_F(ClientTest, HealthOfAnUnknownServiceIsNotFound) {
  absl::StatusOr<bool> serving = client_->Health("no.such.Service");
  EXPECT_EQ(serving.status().code(), absl::StatusCode::kNotFound);
}

TEST_F(ClientTest, ManyThreadsShareOneClient) {
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      Tensor x = RandomTensor(DType::kFloat32, {100}, static_cast<uint32_t>(t));
      absl::StatusOr<Tensor> out = Tensor::Allocate(DType::kFloat32, {100});
      for (int i = 0; i < 25; ++i) {
        absl::StatusOr<Timing> timing =
            client_->ScaleShiftInto(x.view(), 2.0, 1.0, out->mutable_view());
        if (!timing.ok() || out->bytes() != x.bytes()) ++failures[t];
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_THAT(failures, ::testing::Each(0));
}

// A server that never answers: every call ends DEADLINE_EXCEEDED (which is not retried).
TEST(ClientDeadlineTest, SilentServerGivesDeadlineExceeded) {
  testing::StallingTestServer server;
  ASSERT_TRUE(server.ok());
  ClientOptions options;
  options.default_deadline = std::chrono::milliseconds(100);
  std::unique_ptr<Client> client = MakeClient(server.target(), options);
  ASSERT_NE(client, nullptr);
  Tensor x = RandomTensor(DType::kFloat32, {4});
  EXPECT_EQ(client->ScaleShift(x.view(), 2.0, 1.0).status().code(),
            absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(client->ScaleShiftInto(x.view(), 2.0, 1.0, x.mutable_view()).status().code(),
            absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(client->GetServerInfo().status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(client->Health().status().code(), absl::StatusCode::kDeadlineExceeded);
  Results results(1);
  client->ScaleShiftAsync(x.view(), 2.0, 1.0, results.Callback(0));
  EXPECT_EQ(results.Wait()[0].status().code(), absl::StatusCode::kDeadlineExceeded);

  CallOptions call;  // Per-call override of the client default.
  call.deadline = std::chrono::milliseconds(50);
  EXPECT_EQ(client->ScaleShift(x.view(), 2.0, 1.0, call).status().code(),
            absl::StatusCode::kDeadlineExceeded);
  absl::StatusOr<std::unique_ptr<StreamSession>> stream = client->OpenStream(call);
  ASSERT_TRUE(stream.ok());
  ASSERT_TRUE((*stream)->Send(x.view(), 2.0, 1.0).ok());
  EXPECT_EQ((*stream)->Receive().status().code(), absl::StatusCode::kDeadlineExceeded);
}

// An unreachable server: every call ends UNAVAILABLE once the retries are spent.
class ClientUnavailableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ClientOptions options;
    options.retry.max_attempts = 3;
    options.retry.initial_backoff = std::chrono::milliseconds(5);
    options.retry.max_backoff = std::chrono::milliseconds(20);
    client_ = MakeClient(testing::UnusedTarget(), options);
    ASSERT_NE(client_, nullptr);
  }

  std::unique_ptr<Client> client_;
};

TEST_F(ClientUnavailableTest, UnaryCallsAreUnavailable) {
  Tensor x = RandomTensor(DType::kFloat32, {4});
  EXPECT_EQ(client_->ScaleShift(x.view(), 2.0, 1.0).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(client_->ScaleShiftInto(x.view(), 2.0, 1.0, x.mutable_view()).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(client_->GetServerInfo().status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(client_->Health().status().code(), absl::StatusCode::kUnavailable);
}

TEST_F(ClientUnavailableTest, AsyncCallIsUnavailable) {
  Tensor x = RandomTensor(DType::kFloat32, {4});
  Results results(1);
  client_->ScaleShiftAsync(x.view(), 2.0, 1.0, results.Callback(0));
  EXPECT_EQ(results.Wait()[0].status().code(), absl::StatusCode::kUnavailable);
}

TEST_F(ClientUnavailableTest, StreamReportsUnavailable) {
  absl::StatusOr<std::unique_ptr<StreamSession>> stream = client_->OpenStream();
  ASSERT_TRUE(stream.ok()) << stream.status();
  Tensor x = RandomTensor(DType::kFloat32, {4});
  (*stream)->Send(x.view(), 2.0, 1.0).IgnoreError();  // May or may not be accepted.
  EXPECT_EQ((*stream)->Receive().status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ((*stream)->Close().code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace myops::client
