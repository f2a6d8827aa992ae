// The C++ client's generic Call against the real myops-server binary: myops::scale_shift
// called by name (positional and keyword, unary, async and on a CallStream, chunked there
// when larger than a message) gives exactly ScaleShift's bytes; ListOperators describes
// it; bad calls get INVALID_ARGUMENT.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "myops/client/client.h"
#include "server_process.h"

namespace myops::client {
namespace {

using server::testing::ServerProcess;
using ::testing::Contains;
using ::testing::HasSubstr;

Tensor Random(DType dtype, std::vector<int64_t> shape, uint32_t seed) {
  absl::StatusOr<Tensor> t = Tensor::Allocate(dtype, std::move(shape));
  // Small integers and halves: exact in every float dtype, so any dtype's bytes compare.
  std::string& bytes = const_cast<std::string&>(t->bytes());
  uint32_t x = seed * 2654435761u + 1;
  const size_t item = DTypeItemSize(dtype);
  for (size_t i = 0; i < bytes.size() / item; ++i) {
    x = x * 1664525u + 1013904223u;
    const float v = static_cast<float>(static_cast<int>(x >> 24) - 128) / 2.0f;
    switch (dtype) {
      case DType::kFloat32:
        std::memcpy(&bytes[i * 4], &v, 4);
        break;
      case DType::kFloat64: {
        const double d = v;
        std::memcpy(&bytes[i * 8], &d, 8);
        break;
      }
      default: {  // bfloat16: the upper half of the exact float32.
        uint32_t bits;
        std::memcpy(&bits, &v, 4);
        const uint16_t half = static_cast<uint16_t>(bits >> 16);
        std::memcpy(&bytes[i * 2], &half, 2);
      }
    }
  }
  return *std::move(t);
}

class ClientCallE2eTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new ServerProcess({"--address", "127.0.0.1:0", "--devices", "cpu"});
    port_ = server_->WaitForPort();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    ASSERT_NE(port_, 0) << server_->output();
    ClientOptions options;
    options.target = "127.0.0.1:" + std::to_string(port_);
    absl::StatusOr<std::unique_ptr<Client>> client = Client::Create(options);
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = *std::move(client);
  }

  static ServerProcess* server_;
  static int port_;
  std::unique_ptr<Client> client_;
};

ServerProcess* ClientCallE2eTest::server_ = nullptr;
int ClientCallE2eTest::port_ = 0;

TEST_F(ClientCallE2eTest, CallOfScaleShiftEqualsScaleShift) {
  struct Case {
    DType dtype;
    std::vector<int64_t> shape;
  };
  for (const Case& c : {Case{DType::kFloat32, {256}}, Case{DType::kFloat64, {3, 5}},
                        Case{DType::kBFloat16, {1024}}, Case{DType::kFloat32, {}},
                        Case{DType::kFloat32, {0, 3}}, Case{DType::kFloat32, {1 << 20}}}) {
    const Tensor x = Random(c.dtype, c.shape, 7);
    absl::StatusOr<ScaleShiftResult> expected = client_->ScaleShift(x.view(), 2.0, -0.5);
    ASSERT_TRUE(expected.ok()) << expected.status();
    absl::StatusOr<CallResult> positional =
        client_->Call("myops::scale_shift", {x.view(), 2.0, -0.5});
    ASSERT_TRUE(positional.ok()) << positional.status();
    ASSERT_EQ(positional->outputs.size(), 1u);
    const TensorView y = positional->outputs[0].tensor();
    EXPECT_EQ(y.dtype, c.dtype);
    EXPECT_EQ(y.shape, c.shape);
    EXPECT_TRUE(std::string(static_cast<const char*>(y.data), y.size_bytes) ==
                expected->output.bytes())
        << ShapeToString(c.shape);
    EXPECT_EQ(positional->timing.device, "cpu");
    EXPECT_EQ(positional->timing.replica, expected->timing.replica);
    EXPECT_FALSE(positional->timing.replica.empty());

    absl::StatusOr<CallResult> named =
        client_->Call("myops::scale_shift", {}, {{"x", x.view()}, {"alpha", 2.0}, {"beta", -0.5}});
    ASSERT_TRUE(named.ok()) << named.status();
    EXPECT_TRUE(named->outputs[0].TakeTensor().bytes() == expected->output.bytes());
  }
}

TEST_F(ClientCallE2eTest, AsyncCallEqualsScaleShift) {
  const Tensor x = Random(DType::kFloat32, {4096}, 3);
  absl::StatusOr<ScaleShiftResult> expected = client_->ScaleShift(x.view(), 0.5, 3.0);
  ASSERT_TRUE(expected.ok()) << expected.status();
  std::promise<absl::StatusOr<CallResult>> done;
  client_->CallAsync("myops::scale_shift", {x.view(), 0.5, 3.0}, {},
                     [&](absl::StatusOr<CallResult> r) { done.set_value(std::move(r)); });
  absl::StatusOr<CallResult> r = done.get_future().get();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->outputs[0].TakeTensor().bytes() == expected->output.bytes());
  EXPECT_EQ(r->timing.replica, expected->timing.replica);
  EXPECT_FALSE(r->timing.replica.empty());
}

TEST_F(ClientCallE2eTest, StreamOfCallsEqualsScaleShift) {
  absl::StatusOr<std::unique_ptr<CallStreamSession>> stream = client_->OpenCallStream();
  ASSERT_TRUE(stream.ok()) << stream.status();
  constexpr int kRequests = 16;
  std::map<uint64_t, std::string> expected;
  for (int i = 0; i < kRequests; ++i) {
    const Tensor x = Random(DType::kFloat32, {64, 8}, 100 + i);
    absl::StatusOr<ScaleShiftResult> y = client_->ScaleShift(x.view(), 1.5, i);
    ASSERT_TRUE(y.ok()) << y.status();
    absl::StatusOr<uint64_t> id =
        i == 5 ? (*stream)->Send("myops::scale_shift", {x.view(), 1.5})  // Missing beta.
               : (*stream)->Send("myops::scale_shift", {x.view(), 1.5, i});
    ASSERT_TRUE(id.ok()) << id.status();
    expected[*id] = y->output.bytes();
  }
  ASSERT_TRUE((*stream)->CloseSend().ok());
  for (int i = 0; i < kRequests; ++i) {
    absl::StatusOr<CallStreamResult> r = (*stream)->Receive();
    ASSERT_TRUE(r.ok()) << r.status();
    if (r->request_id == 6) {
      EXPECT_EQ(r->result.status().code(), absl::StatusCode::kInvalidArgument);
      EXPECT_THAT(r->result.status().message(), HasSubstr("beta"));
      continue;
    }
    ASSERT_TRUE(r->result.ok()) << r->result.status();
    EXPECT_TRUE(r->result->outputs[0].TakeTensor().bytes() == expected[r->request_id])
        << "request " << r->request_id;
  }
  EXPECT_EQ((*stream)->Receive().status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_TRUE((*stream)->Close().ok());
}

TEST_F(ClientCallE2eTest, CancelEndsABlockedReceiveAndTheStream) {
  absl::StatusOr<std::unique_ptr<CallStreamSession>> stream = client_->OpenCallStream();
  ASSERT_TRUE(stream.ok()) << stream.status();
  const Tensor x = Random(DType::kFloat32, {4}, 7);
  ASSERT_TRUE((*stream)->Send("myops::scale_shift", {x.view(), 2.0, 1.0}).ok());
  absl::StatusOr<CallStreamResult> first = (*stream)->Receive();
  ASSERT_TRUE(first.ok() && first->result.ok()) << first.status();
  EXPECT_FALSE(first->result->timing.replica.empty());
  // Nothing more was sent: this Receive waits until Cancel ends the stream.
  std::future<absl::StatusOr<CallStreamResult>> blocked =
      std::async(std::launch::async, [&] { return (*stream)->Receive(); });
  EXPECT_EQ(blocked.wait_for(std::chrono::milliseconds(200)), std::future_status::timeout);
  (*stream)->Cancel();
  ASSERT_EQ(blocked.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_EQ(blocked.get().status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ((*stream)->Send("myops::scale_shift", {x.view(), 2.0, 1.0}).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ((*stream)->Close().code(), absl::StatusCode::kCancelled);
}

TEST_F(ClientCallE2eTest, ChunkedCallsOnAStreamAreExact) {
  ClientOptions options;
  options.target = "127.0.0.1:" + std::to_string(port_);
  options.max_message_bytes = 1 << 20;  // 4 MiB each way: chunks of just under 1 MiB
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Create(options);
  ASSERT_TRUE(client.ok()) << client.status();
  absl::StatusOr<std::unique_ptr<CallStreamSession>> stream = (*client)->OpenCallStream();
  ASSERT_TRUE(stream.ok()) << stream.status();
  const Tensor x = Random(DType::kFloat32, {(1 << 20) + 3}, 11);
  const Tensor small = Random(DType::kFloat32, {4}, 12);
  absl::StatusOr<ScaleShiftResult> expected = client_->ScaleShift(x.view(), 2.0, 1.0);
  ASSERT_TRUE(expected.ok()) << expected.status();
  for (int round = 0; round < 2; ++round) {  // A small request between chunked ones.
    absl::StatusOr<uint64_t> id = (*stream)->Send("myops::scale_shift", {x.view(), 2.0, 1.0});
    ASSERT_TRUE(id.ok()) << id.status();
    absl::StatusOr<uint64_t> small_id =
        (*stream)->Send("myops::scale_shift", {small.view(), 1.0, 0.0});
    ASSERT_TRUE(small_id.ok()) << small_id.status();
    for (int k = 0; k < 2; ++k) {
      absl::StatusOr<CallStreamResult> r = (*stream)->Receive();
      ASSERT_TRUE(r.ok()) << r.status();
      ASSERT_TRUE(r->result.ok()) << r->result.status();
      const std::string y = r->result->outputs[0].TakeTensor().bytes();
      EXPECT_TRUE(y == (r->request_id == *small_id ? small.bytes() : expected->output.bytes()))
          << "request " << r->request_id;
    }
  }
  EXPECT_TRUE((*stream)->Close().ok());
  // Unary Call cannot chunk: its error says where larger requests go.
  absl::StatusOr<CallResult> unary = (*client)->Call("myops::scale_shift", {x.view(), 2.0, 1.0});
  EXPECT_EQ(unary.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(unary.status().message(), HasSubstr("CallStream"));
}

TEST_F(ClientCallE2eTest, ListOperatorsDescribesScaleShift) {
  absl::StatusOr<std::vector<OperatorDescription>> ops = client_->ListOperators();
  ASSERT_TRUE(ops.ok()) << ops.status();
  const OperatorDescription* scale_shift = nullptr;
  const OperatorDescription* in_place = nullptr;
  for (const OperatorDescription& op : *ops) {
    if (op.name == "myops::scale_shift" && op.overload.empty()) scale_shift = &op;
    if (op.name == "myops::scale_shift_") in_place = &op;
  }
  ASSERT_NE(scale_shift, nullptr);
  EXPECT_TRUE(scale_shift->served);
  EXPECT_EQ(scale_shift->schema, "myops::scale_shift(Tensor x, float alpha, float beta) -> Tensor");
  EXPECT_THAT(scale_shift->devices, Contains("cpu"));
  ASSERT_EQ(scale_shift->arguments.size(), 3u);
  EXPECT_EQ(scale_shift->arguments[0].name, "x");
  EXPECT_EQ(scale_shift->arguments[0].kind, SchemaKind::kTensor);
  EXPECT_EQ(scale_shift->arguments[1].kind, SchemaKind::kFloat);
  ASSERT_EQ(scale_shift->returns.size(), 1u);
  EXPECT_EQ(scale_shift->returns[0].kind, SchemaKind::kTensor);
  ASSERT_NE(in_place, nullptr);
  EXPECT_FALSE(in_place->served);
  EXPECT_FALSE(in_place->reason.empty());
}

TEST_F(ClientCallE2eTest, BadCallsAreInvalidArgumentNamingWhatWasWrong) {
  const Tensor x = Random(DType::kFloat32, {4}, 1);
  absl::StatusOr<CallResult> r = client_->Call("myops::no_such_op", {x.view()});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("no_such_op"));
  r = client_->Call("myops::scale_shift", {x.view(), 2.0, 1.0}, {{"gamma", 1.0}});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("gamma"));
  r = client_->Call("myops::scale_shift", {x.view(), "two", 1.0});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("alpha"));
}

}  // namespace
}  // namespace myops::client
