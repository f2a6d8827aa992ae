// Client::Call, CallAsync, CallStreamSession and ListOperators against an in-process
// server written with protobuf's generated code (call_test_server.h), and the retries
// and bearer token of Call as a scripted server observes them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <future>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "call_test_server.h"
#include "myops/client/client.h"
#include "myops/v1/myops.pb.h"
#include "scripted_test_server.h"

namespace myops::client {
namespace {

using ::testing::HasSubstr;

Tensor Numbered(int64_t n, float base = 0) {
  absl::StatusOr<Tensor> t = Tensor::Allocate(DType::kFloat32, {n});
  auto* data = static_cast<float*>(t->mutable_data());
  for (int64_t i = 0; i < n; ++i) data[i] = base + static_cast<float>(i);
  return *std::move(t);
}

std::string Bytes(const TensorView& t) {
  return std::string(static_cast<const char*>(t.data), t.size_bytes);
}

class ClientCallTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.ok());
    ClientOptions options;
    options.target = server_.target();
    options.max_message_bytes = 48 << 20;
    absl::StatusOr<std::unique_ptr<Client>> client = Client::Create(options);
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = *std::move(client);
  }

  testing::CallTestServer server_;
  std::unique_ptr<Client> client_;
};

TEST_F(ClientCallTest, EchoesEveryKindPositionalAndByName) {
  const Tensor x = Numbered(5);
  const Tensor y = Numbered(3, 10);
  const std::vector<Value> args = {x.view(),
                                   2.5,
                                   -7,
                                   true,
                                   "s",
                                   Value::IntList({1, 2}),
                                   Value::FloatList({0.5}),
                                   std::vector<TensorView>{x.view(), y.view()},
                                   DType::kFloat16,
                                   Value()};
  const std::vector<NamedArg> kwargs = {{"beta", 1.0}, {"other", y}};
  CallOptions options;
  options.device = "cpu";
  absl::StatusOr<CallResult> r = client_->Call("test::echo", args, kwargs, options);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->outputs.size(), args.size() + 2 * kwargs.size());
  EXPECT_EQ(Bytes(r->outputs[0].tensor()), x.bytes());
  EXPECT_EQ(r->outputs[0].tensor().shape, x.shape());
  EXPECT_EQ(r->outputs[1].float_value(), 2.5);
  EXPECT_EQ(r->outputs[2].int_value(), -7);
  EXPECT_TRUE(r->outputs[3].bool_value());
  EXPECT_EQ(r->outputs[4].string_value(), "s");
  EXPECT_EQ(r->outputs[5].int_list(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(r->outputs[6].float_list(), (std::vector<double>{0.5}));
  ASSERT_EQ(r->outputs[7].tensor_list().size(), 2u);
  EXPECT_EQ(Bytes(r->outputs[7].tensor_list()[1]), y.bytes());
  EXPECT_EQ(r->outputs[8].scalar_type(), DType::kFloat16);
  EXPECT_TRUE(r->outputs[9].is_none());
  EXPECT_EQ(r->outputs[10].string_value(), "beta");
  EXPECT_EQ(r->outputs[11].float_value(), 1.0);
  EXPECT_EQ(r->outputs[12].string_value(), "other");
  EXPECT_EQ(Bytes(r->outputs[13].tensor()), y.bytes());
  EXPECT_EQ(r->timing.device, "cpu");
}

TEST_F(ClientCallTest, SixteenMebibytesRoundTrip) {
  const Tensor x = Numbered(int64_t{4} << 20);
  for (int i = 0; i < 3; ++i) {  // Later calls reuse the pooled send buffer.
    absl::StatusOr<CallResult> r = client_->Call("test::echo", {x.view()});
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(r->outputs[0].tensor().data != x.data());
    EXPECT_EQ(Bytes(r->outputs[0].tensor()), x.bytes());
  }
}

TEST_F(ClientCallTest, ServerErrorsPassThrough) {
  absl::StatusOr<CallResult> r = client_->Call("test::fail", {1});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "test::fail: argument \"x\"");
  EXPECT_EQ(client_->Call("no::such", {}).status().code(), absl::StatusCode::kNotFound);
}

TEST(ClientCallValidationTest, BadArgumentsNeverReachTheServer) {
  ClientOptions options;
  options.target = "127.0.0.1:1";  // Nothing listens: a sent call would be UNAVAILABLE.
  options.retry.max_attempts = 1;
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Create(options);
  ASSERT_TRUE(client.ok());
  const TensorView null_data{DType::kFloat32, {4}, nullptr, 16};
  absl::StatusOr<CallResult> r = (*client)->Call("myops::scale_shift", {null_data, 2.0, 1.0});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("argument 1: data is null"));

  std::thread::id called_on;
  absl::Status async_status;
  (*client)->CallAsync("myops::scale_shift", {}, {{"x", null_data}},
                       [&](absl::StatusOr<CallResult> result) {
                         called_on = std::this_thread::get_id();
                         async_status = result.status();
                       });
  EXPECT_EQ(called_on, std::this_thread::get_id());
  EXPECT_THAT(async_status.message(), HasSubstr("argument \"x\": data is null"));

  absl::StatusOr<std::unique_ptr<CallStreamSession>> stream = (*client)->OpenCallStream();
  ASSERT_TRUE(stream.ok());
  EXPECT_EQ((*stream)->Send("", {}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(ClientCallTest, AsyncCallsCompleteOnGrpcThreads) {
  constexpr int kCalls = 16;
  std::vector<Tensor> inputs;
  for (int i = 0; i < kCalls; ++i) inputs.push_back(Numbered(100, 1000.0f * i));
  std::vector<std::promise<absl::StatusOr<CallResult>>> done(kCalls);
  for (int i = 0; i < kCalls; ++i) {
    Tensor copy = inputs[i];
    client_->CallAsync(
        "test::echo", {copy.view(), i}, {},
        [&done, i](absl::StatusOr<CallResult> r) { done[i].set_value(std::move(r)); });
    copy = Tensor();  // The request holds its own copy of the data.
  }
  for (int i = 0; i < kCalls; ++i) {
    absl::StatusOr<CallResult> r = done[i].get_future().get();
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(Bytes(r->outputs[0].tensor()), inputs[i].bytes());
    EXPECT_EQ(r->outputs[1].int_value(), i);
  }
}

TEST_F(ClientCallTest, StreamPipelinesCallsAndGoesOnAfterErrors) {
  absl::StatusOr<std::unique_ptr<CallStreamSession>> opened = client_->OpenCallStream();
  ASSERT_TRUE(opened.ok()) << opened.status();
  CallStreamSession& stream = **opened;
  constexpr int kRequests = 20;
  std::map<uint64_t, std::string> sent;
  for (int i = 0; i < kRequests; ++i) {
    const Tensor x = Numbered(64, 100.0f * i);
    absl::StatusOr<uint64_t> id =
        i == 7 ? stream.Send("test::fail", {x.view()}) : stream.Send("test::echo", {x.view()});
    ASSERT_TRUE(id.ok()) << id.status();
    EXPECT_EQ(*id, static_cast<uint64_t>(i + 1));
    sent[*id] = x.bytes();
  }
  const TensorView bad{DType::kFloat32, {2}, nullptr, 8};
  EXPECT_EQ(stream.Send("test::echo", {bad}).status().code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(stream.CloseSend().ok());
  for (int i = 0; i < kRequests; ++i) {
    absl::StatusOr<CallStreamResult> r = stream.Receive();
    ASSERT_TRUE(r.ok()) << r.status();
    if (r->request_id == 8) {
      EXPECT_EQ(r->result.status().code(), absl::StatusCode::kInvalidArgument);
      continue;
    }
    ASSERT_TRUE(r->result.ok()) << r->result.status();
    EXPECT_EQ(r->result->request_id, r->request_id);
    EXPECT_EQ(Bytes(r->result->outputs[0].tensor()), sent[r->request_id]);
  }
  EXPECT_EQ(stream.Receive().status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_TRUE(stream.Close().ok());
  EXPECT_EQ(stream.Send("test::echo", {1}).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(ClientCallTest, ListOperatorsDescribesSchemas) {
  absl::StatusOr<std::vector<OperatorDescription>> ops = client_->ListOperators();
  ASSERT_TRUE(ops.ok()) << ops.status();
  ASSERT_EQ(ops->size(), 4u);
  const OperatorDescription& echo = (*ops)[0];
  EXPECT_EQ(echo.name, "test::echo");
  EXPECT_TRUE(echo.served);
  EXPECT_EQ(echo.devices, (std::vector<std::string>{"cpu"}));
  ASSERT_EQ(echo.arguments.size(), 2u);
  EXPECT_EQ(echo.arguments[0].kind, SchemaKind::kTensor);
  EXPECT_EQ(echo.arguments[1].name, "alpha");
  EXPECT_EQ(echo.arguments[1].kind, SchemaKind::kFloat);
  EXPECT_TRUE(echo.arguments[1].kwarg_only);
  EXPECT_TRUE(echo.arguments[1].has_default);
  EXPECT_EQ(echo.arguments[1].default_value, "1.");
  ASSERT_EQ(echo.returns.size(), 1u);
  EXPECT_EQ(SchemaKindName(echo.returns[0].kind), "tensor");
  EXPECT_FALSE((*ops)[2].served);
  EXPECT_EQ((*ops)[2].reason, "mutates argument x");
  EXPECT_EQ((*ops)[3].name, "test::wait");
}

TEST(ClientCallRetryTest, UnavailableIsRetriedWithTheTokenOnEveryAttempt) {
  myops::v1::CallResponse canned;
  canned.add_outputs()->set_int_value(42);
  testing::ScriptedTestServer server(2, grpc::StatusCode::UNAVAILABLE,
                                     {{"/myops.v1.Myops/Call", canned.SerializeAsString()}});
  ASSERT_TRUE(server.ok());
  ClientOptions options;
  options.target = server.target();
  options.retry.initial_backoff = std::chrono::milliseconds(1);
  options.retry.max_backoff = std::chrono::milliseconds(2);
  options.auth_token = "call-token";
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Create(options);
  ASSERT_TRUE(client.ok());
  absl::StatusOr<CallResult> r = (*client)->Call("test::x", {1});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->outputs[0].int_value(), 42);
  std::promise<absl::StatusOr<CallResult>> async;
  (*client)->CallAsync("test::x", {1}, {}, [&](absl::StatusOr<CallResult> result) {
    async.set_value(std::move(result));
  });
  EXPECT_TRUE(async.get_future().get().ok());
  const std::vector<testing::ScriptedTestServer::Call> calls = server.calls();
  ASSERT_EQ(calls.size(), 4u);  // Two failures, then the blocking and the async call.
  for (const auto& call : calls) {
    EXPECT_EQ(call.method, "/myops.v1.Myops/Call");
    EXPECT_EQ(call.authorization, "Bearer call-token");
  }
}

}  // namespace
}  // namespace myops::client
