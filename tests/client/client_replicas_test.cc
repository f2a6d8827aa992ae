// The C++ client over many replicas behind one target ("ipv4:A,B,C"): every result names
// the replica that served it (the "myops-replica" response metadata), round_robin spreads
// unary and asynchronous calls evenly, pick_first keeps to one replica, a stream stays on
// one replica, and the channel's service config follows the options.
#include <gtest/gtest.h>

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "client_core.h"
#include "echo_test_server.h"
#include "myops/client/client.h"

namespace myops::client {
namespace {

constexpr int kReplicas = 3;

class ClientReplicasTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::vector<std::string> addresses;
    for (int i = 0; i < kReplicas; ++i) {
      servers_.push_back(std::make_unique<testing::EchoTestServer>("echo-" + std::to_string(i)));
      ASSERT_TRUE(servers_.back()->ok());
      addresses.push_back(servers_.back()->target());
    }
    target_ = "ipv4:";
    for (const std::string& address : addresses) {
      target_ += (target_.size() > 5 ? "," : "") + address;
    }
    input_ = *Tensor::Allocate(DType::kFloat32, {8});
  }

  std::unique_ptr<Client> MakeClient(LoadBalancing policy) {
    ClientOptions options;
    options.target = target_;
    options.load_balancing = policy;
    absl::StatusOr<std::unique_ptr<Client>> client = Client::Create(options);
    EXPECT_TRUE(client.ok()) << client.status();
    return client.ok() ? *std::move(client) : nullptr;
  }

  // Calls until every replica has served once (each connection is up); false if that
  // takes more than 10,000 calls.
  bool ConnectToAll(Client& client) {
    std::map<std::string, int> seen;
    for (int i = 0; i < 10000 && static_cast<int>(seen.size()) < kReplicas; ++i) {
      absl::StatusOr<ScaleShiftResult> result = client.ScaleShift(input_.view(), 2.0, 1.0);
      if (!result.ok()) return false;
      ++seen[result->timing.replica];
    }
    return static_cast<int>(seen.size()) == kReplicas;
  }

  std::vector<std::unique_ptr<testing::EchoTestServer>> servers_;
  std::string target_;
  Tensor input_;
};

TEST_F(ClientReplicasTest, RoundRobinSpreadsUnaryCallsEvenly) {
  std::unique_ptr<Client> client = MakeClient(LoadBalancing::kRoundRobin);
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(ConnectToAll(*client));
  std::map<std::string, int> counts;
  Tensor out = *Tensor::Allocate(DType::kFloat32, {8});
  for (int i = 0; i < 300; ++i) {
    if (i % 2 == 0) {
      absl::StatusOr<ScaleShiftResult> result = client->ScaleShift(input_.view(), 2.0, 1.0);
      ASSERT_TRUE(result.ok()) << result.status();
      ++counts[result->timing.replica];
    } else {
      absl::StatusOr<Timing> timing =
          client->ScaleShiftInto(input_.view(), 2.0, 1.0, out.mutable_view());
      ASSERT_TRUE(timing.ok()) << timing.status();
      ++counts[timing->replica];
    }
  }
  ASSERT_EQ(counts.size(), static_cast<size_t>(kReplicas));
  for (const auto& [replica, count] : counts) {
    EXPECT_NEAR(count, 100, 15) << replica;
  }
}

TEST_F(ClientReplicasTest, AsyncResultsNameTheirReplica) {
  std::unique_ptr<Client> client = MakeClient(LoadBalancing::kRoundRobin);
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(ConnectToAll(*client));
  std::mutex mu;
  std::condition_variable done;
  std::map<std::string, int> counts;
  int finished = 0;
  for (int i = 0; i < 300; ++i) {
    client->ScaleShiftAsync(input_.view(), 2.0, 1.0, [&](absl::StatusOr<ScaleShiftResult> r) {
      std::lock_guard<std::mutex> lock(mu);
      ++counts[r.ok() ? r->timing.replica : r.status().ToString()];
      ++finished;
      done.notify_all();
    });
  }
  std::unique_lock<std::mutex> lock(mu);
  done.wait(lock, [&] { return finished == 300; });
  ASSERT_EQ(counts.size(), static_cast<size_t>(kReplicas));
  for (const auto& [replica, count] : counts) {
    EXPECT_NEAR(count, 100, 15) << replica;
  }
}

TEST_F(ClientReplicasTest, PickFirstKeepsToOneReplica) {
  std::unique_ptr<Client> client = MakeClient(LoadBalancing::kPickFirst);
  ASSERT_NE(client, nullptr);
  std::map<std::string, int> counts;
  for (int i = 0; i < 100; ++i) {
    absl::StatusOr<ScaleShiftResult> result = client->ScaleShift(input_.view(), 2.0, 1.0);
    ASSERT_TRUE(result.ok()) << result.status();
    ++counts[result->timing.replica];
  }
  EXPECT_EQ(counts.size(), 1u);
}

TEST_F(ClientReplicasTest, AStreamStaysOnOneReplica) {
  std::unique_ptr<Client> client = MakeClient(LoadBalancing::kRoundRobin);
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(ConnectToAll(*client));
  std::map<std::string, int> streams_per_replica;
  for (int s = 0; s < 6; ++s) {
    absl::StatusOr<std::unique_ptr<StreamSession>> stream = client->OpenStream();
    ASSERT_TRUE(stream.ok()) << stream.status();
    std::map<std::string, int> counts;
    for (int i = 0; i < 20; ++i) {
      ASSERT_TRUE((*stream)->Send(input_.view(), 2.0, 1.0).ok());
      absl::StatusOr<StreamResult> result = (*stream)->Receive();
      ASSERT_TRUE(result.ok() && result->result.ok());
      ++counts[result->result->timing.replica];
    }
    ASSERT_TRUE((*stream)->Close().ok());
    ASSERT_EQ(counts.size(), 1u);
    EXPECT_FALSE(counts.begin()->first.empty());
    ++streams_per_replica[counts.begin()->first];
  }
  EXPECT_EQ(streams_per_replica.size(), static_cast<size_t>(kReplicas));  // Streams spread.
}

TEST(ClientReplicaOptionsTest, ServiceConfigFollowsTheOptions) {
  ClientOptions options;
  EXPECT_EQ(internal::ServiceConfigJson(options),
            R"({"loadBalancingConfig":[{"round_robin":{}}]})");
  options.health_checking = true;
  EXPECT_EQ(
      internal::ServiceConfigJson(options),
      R"({"loadBalancingConfig":[{"round_robin":{}}],"healthCheckConfig":{"serviceName":""}})");
  options.load_balancing = LoadBalancing::kPickFirst;
  EXPECT_EQ(internal::ServiceConfigJson(options), R"({"loadBalancingConfig":[{"pick_first":{}}]})");
  options.load_balancing = static_cast<LoadBalancing>(7);
  absl::Status status = internal::ValidateClientOptions(options);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("load_balancing"), std::string::npos) << status;
}

TEST(ClientReplicaOptionsTest, AServerWithoutANameGivesAnEmptyReplica) {
  testing::EchoTestServer server;
  ASSERT_TRUE(server.ok());
  ClientOptions options;
  options.target = server.target();
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Create(options);
  ASSERT_TRUE(client.ok());
  Tensor x = *Tensor::Allocate(DType::kFloat32, {4});
  absl::StatusOr<ScaleShiftResult> result = (*client)->ScaleShift(x.view(), 2.0, 1.0);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->timing.replica, "");
}

}  // namespace
}  // namespace myops::client
