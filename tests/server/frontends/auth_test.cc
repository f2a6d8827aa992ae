// Bearer-token authentication (--auth-token-file): every myops.v1.Myops RPC refuses a
// call without a right "authorization: Bearer <token>" with UNAUTHENTICATED, and never
// echoes what was sent; every token of a file of several is accepted; the health service
// stays open; bad token files fail startup.
// Exercised with raw stubs (any metadata) and with the C++ client's auth_token.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "myops/client/client.h"
#include "test_server.h"

namespace myops::server {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kToken[] = "tok-3f9a.b7";

class AuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char path[] = "/tmp/myops_token_XXXXXX";
    const int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    close(fd);
    token_file_ = path;
    WriteTokenFile(std::string(kToken) + "\n");  // One trailing newline is stripped.
    ServerOptions options = testing::LoopbackOptions();
    options.auth_token_file = token_file_;
    t_ = testing::StartServer(options);
    ASSERT_TRUE(t_.server);
  }
  void TearDown() override { std::remove(token_file_.c_str()); }

  void WriteTokenFile(const std::string& contents) {
    std::ofstream(token_file_, std::ios::binary | std::ios::trunc) << contents;
  }

  // The three RPCs with `authorization` as metadata ("" = none).
  grpc::Status CallScaleShift(const std::string& authorization) {
    grpc::ClientContext ctx;
    Prepare(&ctx, authorization);
    myops::v1::ScaleShiftResponse response;
    return t_.stub->ScaleShift(&ctx, testing::MakeRequest(DType::kFloat32, {4}, 2.0, 1.0),
                               &response);
  }
  grpc::Status CallServerInfo(const std::string& authorization) {
    grpc::ClientContext ctx;
    Prepare(&ctx, authorization);
    myops::v1::ServerInfoResponse response;
    return t_.stub->ServerInfo(&ctx, myops::v1::ServerInfoRequest(), &response);
  }
  grpc::Status CallStream(const std::string& authorization) {
    grpc::ClientContext ctx;
    Prepare(&ctx, authorization);
    auto stream = t_.stub->ScaleShiftStream(&ctx);
    myops::v1::ScaleShiftRequest request = testing::MakeRequest(DType::kFloat32, {4}, 2.0, 1.0);
    request.set_request_id(7);
    stream->Write(request);
    stream->WritesDone();
    myops::v1::ScaleShiftStreamResponse response;
    int responses = 0;
    while (stream->Read(&response)) {
      EXPECT_EQ(response.request_id(), 7u);
      EXPECT_TRUE(response.has_response());
      ++responses;
    }
    grpc::Status status = stream->Finish();
    EXPECT_EQ(responses, status.ok() ? 1 : 0);
    return status;
  }

  static void Prepare(grpc::ClientContext* ctx, const std::string& authorization) {
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    if (!authorization.empty()) ctx->AddMetadata("authorization", authorization);
  }

  void ExpectAllRefused(const std::string& authorization) {
    SCOPED_TRACE("authorization: \"" + authorization + "\"");
    for (const grpc::Status& status : {CallScaleShift(authorization), CallServerInfo(authorization),
                                       CallStream(authorization)}) {
      EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
      EXPECT_THAT(status.error_message(), HasSubstr("\"authorization: Bearer <token>\""));
      if (!authorization.empty()) {
        EXPECT_THAT(status.error_message(), Not(HasSubstr(authorization)));
      }
    }
  }

  std::string token_file_;
  testing::TestServer t_;
};

TEST_F(AuthTest, CallsWithoutTheRightTokenAreUnauthenticated) {
  ExpectAllRefused("");
  ExpectAllRefused("Bearer wrong-token");
  ExpectAllRefused(std::string("Bearer ") + kToken + "x");  // Longer.
  ExpectAllRefused(std::string("Bearer ") + (kToken + 1));  // Shorter.
  ExpectAllRefused(std::string("Basic ") + kToken);         // Wrong scheme.
  ExpectAllRefused(kToken);                                 // No scheme.
  ExpectAllRefused(std::string("Bearer  ") + kToken);       // Not exactly one space.
}

TEST_F(AuthTest, TheRightTokenIsAccepted) {
  const std::string authorization = std::string("Bearer ") + kToken;
  EXPECT_TRUE(CallScaleShift(authorization).ok());
  EXPECT_TRUE(CallServerInfo(authorization).ok());
  EXPECT_TRUE(CallStream(authorization).ok());
}

TEST_F(AuthTest, TheSchemeIsCaseInsensitive) {
  for (const char* scheme : {"bearer ", "BEARER ", "bEaReR "}) {
    const std::string authorization = std::string(scheme) + kToken;
    EXPECT_TRUE(CallScaleShift(authorization).ok()) << scheme;
    EXPECT_TRUE(CallStream(authorization).ok()) << scheme;
  }
  ExpectAllRefused(std::string("bearer ") + kToken + "x");  // The token is not.
}

TEST_F(AuthTest, HealthNeedsNoToken) {
  EXPECT_EQ(testing::HealthStatus(t_.channel, ""), 1);  // SERVING
  EXPECT_EQ(testing::HealthStatus(t_.channel, "myops.v1.Myops"), 1);
}

TEST_F(AuthTest, TheClientSendsItsToken) {
  client::ClientOptions options;
  options.target = t_.address;
  options.auth_token = kToken;
  auto client = client::Client::Create(options);
  ASSERT_TRUE(client.ok()) << client.status();
  const float x[3] = {1, 2, 3};
  const client::TensorView view{client::DType::kFloat32, {3}, x, sizeof x};
  auto result = (*client)->ScaleShift(view, 2.0, 1.0);
  ASSERT_TRUE(result.ok()) << result.status();
  const float expected[3] = {3, 5, 7};
  EXPECT_EQ(result->output.bytes(),
            std::string(reinterpret_cast<const char*>(expected), sizeof expected));
  EXPECT_TRUE((*client)->GetServerInfo().ok());
  auto stream = (*client)->OpenStream();
  ASSERT_TRUE(stream.ok());
  ASSERT_TRUE((*stream)->Send(view, 2.0, 1.0).ok());
  auto received = (*stream)->Receive();
  ASSERT_TRUE(received.ok()) << received.status();
  EXPECT_TRUE(received->result.ok()) << received->result.status();
  EXPECT_TRUE((*stream)->Close().ok());
}

TEST_F(AuthTest, TheClientWithoutOrWithAWrongTokenIsRefused) {
  for (const std::string& token : {std::string(), std::string("not-the-token")}) {
    SCOPED_TRACE("token \"" + token + "\"");
    client::ClientOptions options;
    options.target = t_.address;
    options.auth_token = token;
    auto client = client::Client::Create(options);
    ASSERT_TRUE(client.ok()) << client.status();
    const float x[1] = {1};
    const client::TensorView view{client::DType::kFloat32, {1}, x, sizeof x};
    EXPECT_EQ((*client)->ScaleShift(view, 2.0, 1.0).status().code(),
              absl::StatusCode::kUnauthenticated);
    EXPECT_EQ((*client)->GetServerInfo().status().code(), absl::StatusCode::kUnauthenticated);
    auto stream = (*client)->OpenStream();
    ASSERT_TRUE(stream.ok());
    (*stream)->Send(view, 2.0, 1.0).IgnoreError();  // May or may not be accepted.
    EXPECT_EQ((*stream)->Receive().status().code(), absl::StatusCode::kUnauthenticated);
    auto health = (*client)->Health();  // Open to all.
    ASSERT_TRUE(health.ok()) << health.status();
    EXPECT_TRUE(*health);
  }
}

// One token per line, each a tenant: every one is accepted ("\r\n" and empty lines as
// the file may have them), and nothing else (no other line's prefix, no two joined).
TEST_F(AuthTest, EveryTokenOfAFileOfSeveralIsAccepted) {
  WriteTokenFile("tok-alpha\r\ntok-beta\n\ntok-gamma");
  ServerOptions options = testing::LoopbackOptions();
  options.auth_token_file = token_file_;
  t_ = testing::StartServer(options);
  ASSERT_TRUE(t_.server);
  for (const char* token : {"tok-alpha", "tok-beta", "tok-gamma"}) {
    SCOPED_TRACE(token);
    EXPECT_TRUE(CallServerInfo(std::string("Bearer ") + token).ok());
    EXPECT_TRUE(CallStream(std::string("Bearer ") + token).ok());
  }
  ExpectAllRefused(std::string("Bearer ") + kToken);  // the old file's
  ExpectAllRefused("Bearer tok-");
  ExpectAllRefused("Bearer tok-alphatok-beta");
}

TEST_F(AuthTest, ARepeatedTokenFailsStartupNamingItsLine) {
  WriteTokenFile("tok-alpha\ntok-beta\ntok-alpha\n");
  ServerOptions options = testing::LoopbackOptions();
  options.auth_token_file = token_file_;
  auto server = Server::Start(options);
  ASSERT_FALSE(server.ok());
  EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(server.status().message(), HasSubstr("line 3 repeats an earlier token"));
  EXPECT_THAT(server.status().message(), Not(HasSubstr("tok-")));
}

TEST_F(AuthTest, BadTokenFilesFailStartup) {
  ServerOptions options = testing::LoopbackOptions();
  options.auth_token_file = token_file_;
  for (const char* contents : {"", "\n", "\r\n"}) {
    WriteTokenFile(contents);
    auto server = Server::Start(options);
    ASSERT_FALSE(server.ok());
    EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(server.status().message(),
                HasSubstr("--auth-token-file: \"" + token_file_ + "\" holds no token"));
  }
  options.auth_token_file = token_file_ + ".absent";
  auto server = Server::Start(options);
  ASSERT_FALSE(server.ok());
  EXPECT_EQ(server.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(server.status().message(),
              HasSubstr("--auth-token-file: cannot read \"" + token_file_ + ".absent\""));
}

}  // namespace
}  // namespace myops::server
