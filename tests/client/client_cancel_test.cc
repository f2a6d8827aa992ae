// Cancelling asynchronous calls (AsyncCall::Cancel): a call a server never answers ends
// with CANCELLED, a cancelled call is not retried, cancelling a finished call changes
// nothing; the asynchronous ListOperators, ServerInfo and health check; and a channel
// whose last reference a completion drops.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <string>

#include "myops/client/client.h"
#include "myops/v1/myops.pb.h"
#include "scripted_test_server.h"

namespace myops::client {
namespace {

using testing::ScriptedTestServer;

const float kInput[2] = {1.0f, 2.0f};
const TensorView kX{DType::kFloat32, {2}, kInput, sizeof kInput};

// A loopback TCP listener that accepts connections (the kernel does) and never answers:
// calls to it stay pending until their deadline.
class SilentListener {
 public:
  SilentListener() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t size = sizeof address;
    if (fd_ < 0 || bind(fd_, reinterpret_cast<sockaddr*>(&address), size) != 0 ||
        listen(fd_, 16) != 0 ||
        getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &size) != 0) {
      return;
    }
    port_ = ntohs(address.sin_port);
  }
  ~SilentListener() {
    if (fd_ >= 0) close(fd_);
  }
  SilentListener(const SilentListener&) = delete;
  SilentListener& operator=(const SilentListener&) = delete;

  std::string target() const { return "127.0.0.1:" + std::to_string(port_); }
  bool ok() const { return port_ != 0; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

std::unique_ptr<Client> MakeClient(const std::string& target, int max_attempts = 1) {
  ClientOptions options;
  options.target = target;
  options.default_deadline = std::chrono::seconds(120);
  options.retry.max_attempts = max_attempts;
  options.retry.initial_backoff = std::chrono::milliseconds(1);
  options.retry.max_backoff = std::chrono::milliseconds(5);
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Create(options);
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? *std::move(client) : nullptr;
}

// Counts the callback's runs and keeps the first result.
template <typename T>
struct Outcome {
  std::promise<absl::StatusOr<T>> promise;
  std::atomic<int> runs{0};
  std::function<void(absl::StatusOr<T>)> Callback() {
    return [this](absl::StatusOr<T> result) {
      if (runs.fetch_add(1) == 0) promise.set_value(std::move(result));
    };
  }
};

TEST(ClientCancelTest, CancelEndsAPendingCallWithCancelled) {
  SilentListener silent;
  ASSERT_TRUE(silent.ok());
  std::unique_ptr<Client> client = MakeClient(silent.target());
  ASSERT_NE(client, nullptr);
  Outcome<ScaleShiftResult> scale_shift;
  Outcome<CallResult> call;
  AsyncCall a = client->ScaleShiftAsync(kX, 2.0, 1.0, scale_shift.Callback());
  AsyncCall b = client->CallAsync("myops::scale_shift", {kX, 2.0, 1.0}, {}, call.Callback());
  a.Cancel();
  b.Cancel();
  b.Cancel();  // Idempotent.
  // Without the cancellation these would wait for the 120 s deadline (the test's timeout).
  EXPECT_EQ(scale_shift.promise.get_future().get().status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(call.promise.get_future().get().status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(scale_shift.runs.load(), 1);
  EXPECT_EQ(call.runs.load(), 1);
}

TEST(ClientCancelTest, CancelledCallIsNotRetried) {
  ScriptedTestServer server(1000, grpc::StatusCode::UNAVAILABLE);
  ASSERT_TRUE(server.ok());
  std::unique_ptr<Client> client = MakeClient(server.target(), /*max_attempts=*/50);
  ASSERT_NE(client, nullptr);
  Outcome<ScaleShiftResult> outcome;
  client->ScaleShiftAsync(kX, 2.0, 1.0, outcome.Callback()).Cancel();
  const absl::StatusOr<ScaleShiftResult> result = outcome.promise.get_future().get();
  // CANCELLED, or the UNAVAILABLE of an attempt that ended before the cancellation; never
  // the 50 attempts the policy allows.
  EXPECT_THAT(result.status().code(),
              ::testing::AnyOf(absl::StatusCode::kCancelled, absl::StatusCode::kUnavailable));
  EXPECT_LE(server.calls().size(), 1u);
}

TEST(ClientCancelTest, CancelAfterCompletionChangesNothing) {
  myops::v1::ServerInfoResponse info;
  info.set_myops_version("9.8.7");
  info.set_workers(3);
  ScriptedTestServer server(0, grpc::StatusCode::OK,
                            {{"/myops.v1.Myops/ServerInfo", info.SerializeAsString()}});
  ASSERT_TRUE(server.ok());
  std::unique_ptr<Client> client = MakeClient(server.target());
  ASSERT_NE(client, nullptr);
  Outcome<ServerInfo> outcome;
  AsyncCall handle = client->GetServerInfoAsync(outcome.Callback());
  const absl::StatusOr<ServerInfo> result = outcome.promise.get_future().get();
  handle.Cancel();
  AsyncCall().Cancel();  // A handle of no call.
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->myops_version, "9.8.7");
  EXPECT_EQ(result->workers, 3);
  EXPECT_EQ(outcome.runs.load(), 1);
}

TEST(ClientCancelTest, AsyncListOperatorsAndHealth) {
  myops::v1::ListOperatorsResponse listing;
  myops::v1::OperatorInfo* op = listing.add_operators();
  op->set_name("test::op");
  op->set_schema("test::op(Tensor x) -> Tensor");
  op->set_served(true);
  const std::string serving("\x08\x01", 2);  // HealthCheckResponse{status: SERVING}
  ScriptedTestServer server(0, grpc::StatusCode::OK,
                            {{"/myops.v1.Myops/ListOperators", listing.SerializeAsString()},
                             {"/grpc.health.v1.Health/Check", serving}});
  ASSERT_TRUE(server.ok());
  std::unique_ptr<Client> client = MakeClient(server.target());
  ASSERT_NE(client, nullptr);
  Outcome<std::vector<OperatorDescription>> operators;
  Outcome<bool> health;
  client->ListOperatorsAsync(operators.Callback());
  client->HealthAsync("", health.Callback());
  const auto listed = operators.promise.get_future().get();
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].name, "test::op");
  const absl::StatusOr<bool> serving_now = health.promise.get_future().get();
  ASSERT_TRUE(serving_now.ok()) << serving_now.status();
  EXPECT_TRUE(*serving_now);
}

TEST(ClientCancelTest, AsyncInfoCallsReportErrors) {
  ScriptedTestServer server(1, grpc::StatusCode::PERMISSION_DENIED);
  ASSERT_TRUE(server.ok());
  std::unique_ptr<Client> client = MakeClient(server.target());
  ASSERT_NE(client, nullptr);
  Outcome<ServerInfo> outcome;
  client->GetServerInfoAsync(outcome.Callback());
  EXPECT_EQ(outcome.promise.get_future().get().status().code(),
            absl::StatusCode::kPermissionDenied);
}

// The last reference to a client's channel dropped by an asynchronous call's completion
// (the Client destroyed while the call was in flight) must not tear down the gRPC
// threads that run completions from one of them: later clients' calls still complete.
// No server runs in this test (an in-process one would hold those threads too): the
// calls go to a closed port and fail with UNAVAILABLE.
TEST(ClientCancelTest, ChannelReleasedByACompletionLeavesCompletionsWorking) {
  std::string target;
  {
    SilentListener closed;  // Closed again at the end of this scope.
    ASSERT_TRUE(closed.ok());
    target = closed.target();
  }
  for (int round = 0; round < 100; ++round) {
    Outcome<ServerInfo> outcome;
    {
      std::unique_ptr<Client> client = MakeClient(target);
      ASSERT_NE(client, nullptr);
      client->GetServerInfoAsync(outcome.Callback());
    }  // The call in flight holds the channel's last reference.
    EXPECT_EQ(outcome.promise.get_future().get().status().code(), absl::StatusCode::kUnavailable);
  }
}

}  // namespace
}  // namespace myops::client
