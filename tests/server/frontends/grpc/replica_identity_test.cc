// A server as one replica of many: its --replica-name on every response (initial
// metadata "myops-replica", whatever the RPC and its outcome), --max-connection-age
// closing old connections so clients re-resolve, and the flags' parsing.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "config.h"
#include "frontends/grpc/replica_identity.h"
#include "test_server.h"

namespace myops::server {
namespace {

std::string ReplicaOf(const grpc::ClientContext& context) {
  const auto& metadata = context.GetServerInitialMetadata();
  const auto found = metadata.find(kReplicaMetadataKey);
  return found == metadata.end() ? "<none>"
                                 : std::string(found->second.data(), found->second.size());
}

TEST(ReplicaTest, EveryResponseNamesTheReplica) {
  ServerOptions options = testing::LoopbackOptions();
  options.replica_name = "myops-7d9f-x2";
  testing::TestServer t = testing::StartServer(options);
  ASSERT_TRUE(t.server);

  grpc::ClientContext ok_context;
  myops::v1::ScaleShiftResponse response;
  ASSERT_TRUE(
      t.stub
          ->ScaleShift(&ok_context, testing::MakeRequest(DType::kFloat32, {4}, 2.0, 1.0), &response)
          .ok());
  EXPECT_EQ(ReplicaOf(ok_context), "myops-7d9f-x2");

  grpc::ClientContext error_context;  // A refused request names its replica too.
  myops::v1::ScaleShiftRequest bad = testing::MakeRequest(DType::kFloat32, {4}, 2.0, 1.0);
  bad.mutable_input()->add_shape(-1);
  EXPECT_EQ(t.stub->ScaleShift(&error_context, bad, &response).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(ReplicaOf(error_context), "myops-7d9f-x2");

  grpc::ClientContext info_context;
  myops::v1::ServerInfoResponse info;
  ASSERT_TRUE(t.stub->ServerInfo(&info_context, {}, &info).ok());
  EXPECT_EQ(ReplicaOf(info_context), "myops-7d9f-x2");

  grpc::ClientContext stream_context;
  auto stream = t.stub->ScaleShiftStream(&stream_context);
  ASSERT_TRUE(stream->Write(testing::MakeRequest(DType::kFloat32, {4}, 2.0, 1.0)));
  myops::v1::ScaleShiftStreamResponse item;
  ASSERT_TRUE(stream->Read(&item));
  EXPECT_EQ(ReplicaOf(stream_context), "myops-7d9f-x2");
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());

  EXPECT_NE(t.server->Describe().find("replica myops-7d9f-x2"), std::string::npos);
}

TEST(ReplicaTest, NoNameSendsNoMetadata) {
  ServerOptions options = testing::LoopbackOptions();
  options.replica_name = "";
  testing::TestServer t = testing::StartServer(options);
  ASSERT_TRUE(t.server);
  grpc::ClientContext context;
  myops::v1::ServerInfoResponse info;
  ASSERT_TRUE(t.stub->ServerInfo(&context, {}, &info).ok());
  EXPECT_EQ(ReplicaOf(context), "<none>");
}

TEST(ReplicaTest, ConnectionsAreClosedAfterTheMaxConnectionAge) {
  ServerOptions options = testing::LoopbackOptions();
  options.max_connection_age = std::chrono::milliseconds(200);
  options.max_connection_age_grace = std::chrono::milliseconds(1000);
  testing::TestServer t = testing::StartServer(options);
  ASSERT_TRUE(t.server);
  const auto limit = std::chrono::system_clock::now() + std::chrono::seconds(60);
  ASSERT_TRUE(t.channel->WaitForConnected(limit));
  // The server's GOAWAY takes the channel out of READY (to IDLE) without any call.
  ASSERT_TRUE(t.channel->WaitForStateChange(GRPC_CHANNEL_READY, limit));
  EXPECT_NE(t.channel->GetState(false), GRPC_CHANNEL_READY);
}

TEST(ReplicaTest, ConnectionsLiveOnWithoutAMaxAge) {
  testing::TestServer t = testing::StartServer(testing::LoopbackOptions());
  ASSERT_TRUE(t.server);
  ASSERT_TRUE(
      t.channel->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(60)));
  EXPECT_FALSE(t.channel->WaitForStateChange(
      GRPC_CHANNEL_READY, std::chrono::system_clock::now() + std::chrono::milliseconds(600)));
}

ParseResult Parse(std::vector<std::string> args) {
  args.insert(args.begin(), "myops-server");
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  return ParseCommandLine(static_cast<int>(argv.size()), argv.data());
}

TEST(ReplicaConfigTest, FlagsSetTheNameAndTheConnectionAge) {
  ParseResult r = Parse({"--replica-name", "pod-1", "--max-connection-age", "300",
                         "--max-connection-age-grace", "1.5"});
  ASSERT_EQ(r.exit_code, -1) << r.message;
  EXPECT_EQ(r.config.server.replica_name, "pod-1");
  EXPECT_EQ(r.config.server.max_connection_age, std::chrono::milliseconds(300000));
  EXPECT_EQ(r.config.server.max_connection_age_grace, std::chrono::milliseconds(1500));
}

TEST(ReplicaConfigTest, DefaultsAreTheHostNameAndNoAge) {
  ParseResult r = Parse({});
  ASSERT_EQ(r.exit_code, -1) << r.message;
  EXPECT_EQ(r.config.server.replica_name, HostName());
  EXPECT_FALSE(r.config.server.replica_name.empty());
  EXPECT_EQ(r.config.server.max_connection_age.count(), 0);
}

TEST(ReplicaConfigTest, BadValuesAreRefused) {
  EXPECT_GT(Parse({"--replica-name", "tab\there"}).exit_code, 0);
  EXPECT_GT(Parse({"--max-connection-age", "-1"}).exit_code, 0);
  EXPECT_GT(Parse({"--max-connection-age", "1e12"}).exit_code, 0);
}

}  // namespace
}  // namespace myops::server
