// What the client puts on the wire, observed by a scripted server: the attempts of each
// call (retries of UNAVAILABLE on the blocking and asynchronous paths, no retry of other
// codes or of streams) and the bearer token on every call.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <future>
#include <set>
#include <string>
#include <vector>

#include "myops/client/client.h"
#include "myops/v1/myops.pb.h"
#include "scripted_test_server.h"

namespace myops::client {
namespace {

using ::testing::Each;
using ::testing::Field;
using ::testing::HasSubstr;
using testing::ScriptedTestServer;

constexpr char kScaleShift[] = "/myops.v1.Myops/ScaleShift";
constexpr char kServerInfo[] = "/myops.v1.Myops/ServerInfo";
constexpr char kStream[] = "/myops.v1.Myops/ScaleShiftStream";
constexpr char kHealth[] = "/grpc.health.v1.Health/Check";

const float kInput[2] = {1.0f, 2.0f};
const TensorView kX{DType::kFloat32, {2}, kInput, sizeof kInput};

// A valid response to kX: a float32 [2] output, computed by "scripted".
std::string CannedResponse() {
  myops::v1::ScaleShiftResponse response;
  response.mutable_output()->set_dtype(myops::v1::DTYPE_FLOAT32);
  response.mutable_output()->add_shape(2);
  response.mutable_output()->set_data(std::string(8, '\0'));
  response.mutable_timing()->set_device("scripted");
  return response.SerializeAsString();
}

std::unique_ptr<Client> MakeClient(const ScriptedTestServer& server, int max_attempts,
                                   const std::string& token = "") {
  ClientOptions options;
  options.target = server.target();
  options.retry.max_attempts = max_attempts;
  options.retry.initial_backoff = std::chrono::milliseconds(1);
  options.retry.max_backoff = std::chrono::milliseconds(5);
  options.auth_token = token;
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Create(options);
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? *std::move(client) : nullptr;
}

absl::StatusOr<ScaleShiftResult> CallAsync(Client& client) {
  std::promise<absl::StatusOr<ScaleShiftResult>> done;
  client.ScaleShiftAsync(kX, 2.0, 1.0, [&done](absl::StatusOr<ScaleShiftResult> result) {
    done.set_value(std::move(result));
  });
  return done.get_future().get();
}

std::vector<std::string> Methods(const ScriptedTestServer& server) {
  std::vector<std::string> methods;
  for (const auto& call : server.calls()) methods.push_back(call.method);
  return methods;
}

TEST(ClientRetryTest, SucceedsAfterTransientUnavailable) {
  ScriptedTestServer server(2, grpc::StatusCode::UNAVAILABLE, {{kScaleShift, CannedResponse()}});
  ASSERT_TRUE(server.ok());
  std::unique_ptr<Client> client = MakeClient(server, 3);
  absl::StatusOr<ScaleShiftResult> result = client->ScaleShift(kX, 2.0, 1.0);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->timing.device, "scripted");
  EXPECT_THAT(Methods(server), Each(std::string(kScaleShift)));
  EXPECT_EQ(server.calls().size(), 3u);
}

TEST(ClientRetryTest, GivesUpAfterMaxAttempts) {
  ScriptedTestServer server(100, grpc::StatusCode::UNAVAILABLE);
  ASSERT_TRUE(server.ok());
  std::unique_ptr<Client> client = MakeClient(server, 4);
  absl::StatusOr<ScaleShiftResult> result = client->ScaleShift(kX, 2.0, 1.0);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(result.status().message(), HasSubstr("scripted failure"));
  EXPECT_EQ(server.calls().size(), 4u);
}

TEST(ClientRetryTest, OtherCodesAreNotRetried) {
  ScriptedTestServer server(100, grpc::StatusCode::RESOURCE_EXHAUSTED);
  ASSERT_TRUE(server.ok());
  std::unique_ptr<Client> client = MakeClient(server, 4);
  EXPECT_EQ(client->ScaleShift(kX, 2.0, 1.0).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(server.calls().size(), 1u);
}

TEST(ClientRetryTest, AsyncSucceedsAfterTransientUnavailable) {
  ScriptedTestServer server(2, grpc::StatusCode::UNAVAILABLE, {{kScaleShift, CannedResponse()}});
  ASSERT_TRUE(server.ok());
  std::unique_ptr<Client> client = MakeClient(server, 3);
  absl::StatusOr<ScaleShiftResult> result = CallAsync(*client);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->timing.device, "scripted");
  EXPECT_EQ(server.calls().size(), 3u);
}

TEST(ClientRetryTest, AsyncGivesUpAfterMaxAttempts) {
  ScriptedTestServer server(100, grpc::StatusCode::UNAVAILABLE);
  ASSERT_TRUE(server.ok());
  std::unique_ptr<Client> client = MakeClient(server, 3);
  EXPECT_EQ(CallAsync(*client).status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(server.calls().size(), 3u);
}

TEST(ClientRetryTest, ServerInfoAndHealthAreRetried) {
  ScriptedTestServer server(2, grpc::StatusCode::UNAVAILABLE);  // Empty answers parse.
  ASSERT_TRUE(server.ok());
  std::unique_ptr<Client> client = MakeClient(server, 3);
  EXPECT_TRUE(client->GetServerInfo().ok());
  EXPECT_EQ(Methods(server), std::vector<std::string>(3, kServerInfo));
  EXPECT_TRUE(client->Health().ok());  // The first attempt succeeds now.
  EXPECT_EQ(Methods(server).back(), kHealth);
}

TEST(ClientRetryTest, StreamsAreNotRetried) {
  ScriptedTestServer server(100, grpc::StatusCode::UNAVAILABLE);
  ASSERT_TRUE(server.ok());
  std::unique_ptr<Client> client = MakeClient(server, 5);
  absl::StatusOr<std::unique_ptr<StreamSession>> stream = client->OpenStream();
  ASSERT_TRUE(stream.ok());
  (*stream)->Send(kX, 2.0, 1.0).IgnoreError();  // May or may not be accepted.
  EXPECT_EQ((*stream)->Receive().status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(Methods(server), std::vector<std::string>{kStream});
}

TEST(ClientAuthTest, TokenIsSentOnEveryCall) {
  ScriptedTestServer server(0, grpc::StatusCode::OK, {{kScaleShift, CannedResponse()}});
  ASSERT_TRUE(server.ok());
  std::unique_ptr<Client> client = MakeClient(server, 1, "s3cr3t.t0ken");
  EXPECT_TRUE(client->ScaleShift(kX, 2.0, 1.0).ok());
  float out[2];
  EXPECT_TRUE(client->ScaleShiftInto(kX, 2.0, 1.0, {DType::kFloat32, {2}, out, sizeof out}).ok());
  EXPECT_TRUE(CallAsync(*client).ok());
  EXPECT_TRUE(client->GetServerInfo().ok());
  EXPECT_TRUE(client->Health().ok());
  absl::StatusOr<std::unique_ptr<StreamSession>> stream = client->OpenStream();
  ASSERT_TRUE(stream.ok());
  (*stream)->Send(kX, 2.0, 1.0).IgnoreError();
  (*stream)->Close().IgnoreError();

  const std::vector<ScriptedTestServer::Call> calls = server.calls();
  const std::vector<std::string> methods = Methods(server);
  EXPECT_EQ(std::set<std::string>(methods.begin(), methods.end()),
            (std::set<std::string>{kScaleShift, kServerInfo, kHealth, kStream}));
  EXPECT_EQ(calls.size(), 6u);
  EXPECT_THAT(calls, Each(Field(&ScriptedTestServer::Call::authorization,
                                std::string("Bearer s3cr3t.t0ken"))));
}

TEST(ClientAuthTest, RetriedAttemptsCarryTheToken) {
  ScriptedTestServer server(2, grpc::StatusCode::UNAVAILABLE, {{kScaleShift, CannedResponse()}});
  ASSERT_TRUE(server.ok());
  std::unique_ptr<Client> client = MakeClient(server, 3, "tok");
  EXPECT_TRUE(CallAsync(*client).ok());
  EXPECT_TRUE(client->ScaleShift(kX, 2.0, 1.0).ok());
  EXPECT_EQ(server.calls().size(), 4u);
  EXPECT_THAT(server.calls(),
              Each(Field(&ScriptedTestServer::Call::authorization, std::string("Bearer tok"))));
}

TEST(ClientAuthTest, NoTokenSendsNoAuthorization) {
  ScriptedTestServer server(0, grpc::StatusCode::OK, {{kScaleShift, CannedResponse()}});
  ASSERT_TRUE(server.ok());
  std::unique_ptr<Client> client = MakeClient(server, 1);
  EXPECT_TRUE(client->ScaleShift(kX, 2.0, 1.0).ok());
  EXPECT_TRUE(client->GetServerInfo().ok());
  EXPECT_THAT(server.calls(),
              Each(Field(&ScriptedTestServer::Call::authorization, std::string("<none>"))));
}

}  // namespace
}  // namespace myops::client
