// The C++ client's own shared memory (ClientOptions::shared_memory) against the real
// server in-process: tensors too large for the client's message limit go through its
// regions (so a call that succeeds proves they did), results come back right, regions
// are reused, re-registered after the server lost them, unregistered when the client
// goes; without the server's consent kAuto falls back inline and kOn fails.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "kserve/v2/grpc_predict_v2.grpc.pb.h"
#include "myops/client/client.h"
#include "test_server.h"

namespace myops::server {
namespace {

using ::testing::HasSubstr;
namespace mc = ::myops::client;

mc::Tensor Ramp(int64_t n) {
  mc::Tensor t = *mc::Tensor::Allocate(DType::kFloat32, {n});
  auto* f = static_cast<float*>(t.mutable_data());
  for (int64_t i = 0; i < n; ++i) f[i] = static_cast<float>(i % 1000);
  return t;
}

void ExpectScaled(const void* data, int64_t n, float alpha, float beta) {
  const auto* f = static_cast<const float*>(data);
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(f[i], alpha * static_cast<float>(i % 1000) + beta) << i;
  }
}

class ClientShmTest : public ::testing::Test {
 protected:
  void Start(bool allow, int max_regions = 64) {
    ServerOptions options = testing::LoopbackOptions();
    options.shared_memory.allow = allow;
    options.shared_memory.limits.max_regions = max_regions;
    options.executor.ops = "myops::*,aten::cat,aten::size";
    t_ = testing::StartServer(options);
    ASSERT_TRUE(t_.server);
    kserve_ = inference::GRPCInferenceService::NewStub(t_.channel);
  }
  // A client whose messages are limited to 64 KiB: a larger tensor arrives only through
  // shared memory.
  std::unique_ptr<mc::Client> NewClient(mc::SharedMemoryMode mode, int max_message_bytes = 64 << 10,
                                        int64_t max_shared_memory_bytes = int64_t{1} << 30) {
    mc::ClientOptions options;
    options.target = t_.address;
    options.shared_memory = mode;
    options.max_message_bytes = max_message_bytes;
    options.max_shared_memory_bytes = max_shared_memory_bytes;
    auto client = mc::Client::Create(options);
    EXPECT_TRUE(client.ok()) << client.status();
    return *std::move(client);
  }
  // The regions registered with the server now.
  std::vector<std::string> Regions() {
    grpc::ClientContext ctx;
    inference::SystemSharedMemoryStatusRequest request;
    inference::SystemSharedMemoryStatusResponse response;
    EXPECT_TRUE(kserve_->SystemSharedMemoryStatus(&ctx, request, &response).ok());
    std::vector<std::string> names;
    for (const auto& [name, status] : response.regions()) names.push_back(name);
    return names;
  }
  testing::TestServer t_;
  std::unique_ptr<inference::GRPCInferenceService::Stub> kserve_;
};

TEST_F(ClientShmTest, ScaleShiftAndCallGoThroughRegionsAndReuseThem) {
  Start(true);
  auto client = NewClient(mc::SharedMemoryMode::kAuto);
  const int64_t n = int64_t{1} << 20;  // 4 MiB, over the 64 KiB message limit
  const mc::Tensor x = Ramp(n);
  for (int round = 0; round < 3; ++round) {
    auto y = client->ScaleShift(x.view(), 2.0, 1.0);
    ASSERT_TRUE(y.ok()) << y.status();
    ExpectScaled(y->output.data(), n, 2.0f, 1.0f);
    EXPECT_EQ(y->timing.device, "cpu");
    mc::Tensor out = *mc::Tensor::Allocate(DType::kFloat32, {n});
    auto timing = client->ScaleShiftInto(x.view(), 3.0, -1.0, out.mutable_view());
    ASSERT_TRUE(timing.ok()) << timing.status();
    ExpectScaled(out.data(), n, 3.0f, -1.0f);
    auto r = client->Call("myops::scale_shift", {x.view(), 0.5}, {{"beta", 2.0}});
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->outputs.size(), 1u);
    ExpectScaled(r->outputs[0].tensor().data, n, 0.5f, 2.0f);
  }
  // One region, reused by every call (they ran one at a time).
  EXPECT_EQ(Regions().size(), 1u);
  client.reset();
  EXPECT_TRUE(Regions().empty());  // unregistered with the client
}

// CallOptions::results_in_shared_memory: results stay in their region, which is not
// reused while they live.
TEST_F(ClientShmTest, ResultsInSharedMemoryKeepTheirRegion) {
  Start(true);
  auto client = NewClient(mc::SharedMemoryMode::kAuto);
  const int64_t n = int64_t{1} << 18;
  const mc::Tensor x = Ramp(n);
  mc::CallOptions in_place;
  in_place.results_in_shared_memory = true;
  auto first = client->ScaleShift(x.view(), 2.0, 0.0, in_place);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(first->output.in_shared_memory());
  EXPECT_TRUE(first->output.bytes().empty());
  auto second = client->Call("myops::scale_shift", {x.view(), 3.0, 0.0}, {}, in_place);
  ASSERT_TRUE(second.ok()) << second.status();
  mc::Tensor second_y = second->outputs[0].TakeTensor();
  EXPECT_TRUE(second_y.in_shared_memory());
  EXPECT_EQ(Regions().size(), 2u);  // the first result holds its region
  ExpectScaled(first->output.data(), n, 2.0f, 0.0f);
  ExpectScaled(second_y.data(), n, 3.0f, 0.0f);
  second_y = mc::Tensor();
  auto copied = client->ScaleShift(x.view(), 4.0, 0.0);  // reuses the second's region
  ASSERT_TRUE(copied.ok()) << copied.status();
  EXPECT_FALSE(copied->output.in_shared_memory());
  ExpectScaled(copied->output.data(), n, 4.0f, 0.0f);
  EXPECT_EQ(Regions().size(), 2u);
  const std::string bytes = first->output.release_bytes();  // copied out, region let go
  ExpectScaled(bytes.data(), n, 2.0f, 0.0f);
  client.reset();
  EXPECT_TRUE(Regions().empty());
}

TEST_F(ClientShmTest, AsynchronousCalls) {
  Start(true);
  auto client = NewClient(mc::SharedMemoryMode::kAuto);
  const int64_t n = int64_t{1} << 18;
  const mc::Tensor x = Ramp(n);
  std::promise<absl::StatusOr<mc::ScaleShiftResult>> scaled;
  client->ScaleShiftAsync(x.view(), 2.0, 0.0, [&](auto r) { scaled.set_value(std::move(r)); });
  std::promise<absl::StatusOr<mc::CallResult>> called;
  client->CallAsync("myops::scale_shift", {x.view(), 4.0, 1.0}, {},
                    [&](auto r) { called.set_value(std::move(r)); });
  auto y = scaled.get_future().get();
  ASSERT_TRUE(y.ok()) << y.status();
  ExpectScaled(y->output.data(), n, 2.0f, 0.0f);
  auto r = called.get_future().get();
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectScaled(r->outputs[0].tensor().data, n, 4.0f, 1.0f);
}

// A CallStream's requests each lease a region until their response (or error) is
// received; pipelined ones hold one each, later ones reuse them.
TEST_F(ClientShmTest, CallStreamRequestsUseRegionsUntilAnswered) {
  Start(true);
  auto client = NewClient(mc::SharedMemoryMode::kAuto, 1 << 20);
  const int64_t n = int64_t{1} << 18;
  const mc::Tensor x = Ramp(n);
  mc::CallOptions in_place;
  in_place.results_in_shared_memory = true;
  auto stream = client->OpenCallStream(in_place);
  ASSERT_TRUE(stream.ok()) << stream.status();
  for (int batch = 0; batch < 2; ++batch) {
    for (int k = 1; k <= 3; ++k) {
      ASSERT_TRUE((*stream)->Send("myops::scale_shift", {x.view(), double(k), 0.0}).ok());
    }
    // A request the server refuses: its region is free again once the error is received.
    ASSERT_TRUE((*stream)->Send("myops::scale_shift", {x.view(), "two", 0.0}).ok());
    for (int k = 1; k <= 4; ++k) {
      auto r = (*stream)->Receive();
      ASSERT_TRUE(r.ok()) << r.status();
      if (!r->result.ok()) {
        EXPECT_EQ(r->result.status().code(), absl::StatusCode::kInvalidArgument);
        continue;
      }
      mc::Tensor y = r->result->outputs[0].TakeTensor();
      EXPECT_TRUE(y.in_shared_memory());
      const float alpha = static_cast<float>((r->request_id - 1) % 4 + 1);
      ExpectScaled(y.data(), n, alpha, 0.0f);
    }
    EXPECT_EQ(Regions().size(), 4u) << "batch " << batch;  // four in flight at most
  }
  EXPECT_TRUE((*stream)->Close().ok());
}

// Results that are no tensor, or larger than the room left for them, come back inline.
TEST_F(ClientShmTest, ResultsThatDoNotFitComeInline) {
  Start(true);
  auto client = NewClient(mc::SharedMemoryMode::kAuto, 16 << 20);
  const int64_t n = int64_t{1} << 18;  // 1 MiB each; their cat is 2 MiB
  const mc::Tensor a = Ramp(n);
  auto r = client->Call("aten::cat", {std::vector<mc::TensorView>{a.view(), a.view()}});
  ASSERT_TRUE(r.ok()) << r.status();
  const mc::TensorView cat = r->outputs[0].tensor();
  ASSERT_EQ(cat.size_bytes, static_cast<size_t>(2 * n * 4));
  ExpectScaled(cat.data, n, 1.0f, 0.0f);
  ExpectScaled(static_cast<const char*>(cat.data) + n * 4, n, 1.0f, 0.0f);
  auto numel = client->Call("aten::size.int", {a.view(), 0});
  ASSERT_TRUE(numel.ok()) << numel.status();
  EXPECT_EQ(numel->outputs[0].int_value(), n);
}

// A server that lost the client's regions (it restarted) gets new ones, once.
TEST_F(ClientShmTest, RegionsTheServerLostAreReplaced) {
  Start(true);
  auto client = NewClient(mc::SharedMemoryMode::kAuto);
  const int64_t n = int64_t{1} << 18;
  const mc::Tensor x = Ramp(n);
  ASSERT_TRUE(client->ScaleShift(x.view(), 2.0, 1.0).ok());
  const std::vector<std::string> before = Regions();
  ASSERT_EQ(before.size(), 1u);
  {
    grpc::ClientContext ctx;
    inference::SystemSharedMemoryUnregisterRequest all;
    inference::SystemSharedMemoryUnregisterResponse response;
    ASSERT_TRUE(kserve_->SystemSharedMemoryUnregister(&ctx, all, &response).ok());
  }
  auto y = client->ScaleShift(x.view(), 2.0, 1.0);
  ASSERT_TRUE(y.ok()) << y.status();
  ExpectScaled(y->output.data(), n, 2.0f, 1.0f);
  const std::vector<std::string> after = Regions();
  ASSERT_EQ(after.size(), 1u);
  EXPECT_NE(after[0], before[0]);
}

TEST_F(ClientShmTest, WithoutTheServersConsentAutoGoesInlineAndOnFails) {
  Start(false);
  const mc::Tensor x = Ramp(int64_t{1} << 16);  // 256 KiB
  auto automatic = NewClient(mc::SharedMemoryMode::kAuto, 1 << 20);
  for (int round = 0; round < 2; ++round) {
    auto y = automatic->ScaleShift(x.view(), 2.0, 1.0);
    ASSERT_TRUE(y.ok()) << y.status();
    ExpectScaled(y->output.data(), int64_t{1} << 16, 2.0f, 1.0f);
  }
  auto on = NewClient(mc::SharedMemoryMode::kOn, 1 << 20);
  auto y = on->ScaleShift(x.view(), 2.0, 1.0);
  EXPECT_EQ(y.status().code(), absl::StatusCode::kUnimplemented) << y.status();
  EXPECT_THAT(y.status().message(), HasSubstr("shared_memory is on"));
  EXPECT_THAT(y.status().message(), HasSubstr("--allow-shared-memory"));
  auto off = NewClient(mc::SharedMemoryMode::kOff, 1 << 20);
  EXPECT_TRUE(off->ScaleShift(x.view(), 2.0, 1.0).ok());
}

// At the server's region limit, kAuto goes inline (and keeps working), kOn says why.
TEST_F(ClientShmTest, AtTheServersRegionLimitAutoGoesInline) {
  Start(true, /*max_regions=*/1);
  const int64_t n = int64_t{1} << 18;
  const mc::Tensor x = Ramp(n);
  auto holder = NewClient(mc::SharedMemoryMode::kOn);
  ASSERT_TRUE(holder->ScaleShift(x.view(), 1.0, 0.0).ok());  // takes the one region
  auto automatic = NewClient(mc::SharedMemoryMode::kAuto, 4 << 20);
  for (int round = 0; round < 3; ++round) {
    auto y = automatic->ScaleShift(x.view(), 2.0, 1.0);
    ASSERT_TRUE(y.ok()) << y.status();
    ExpectScaled(y->output.data(), n, 2.0f, 1.0f);
  }
  auto on = NewClient(mc::SharedMemoryMode::kOn);
  auto y = on->ScaleShift(x.view(), 2.0, 1.0);
  EXPECT_EQ(y.status().code(), absl::StatusCode::kResourceExhausted) << y.status();
  EXPECT_THAT(y.status().message(), HasSubstr("shared_memory is on"));
  EXPECT_EQ(Regions().size(), 1u);
}

TEST_F(ClientShmTest, ThePoolsLimitHolds) {
  Start(true);
  const mc::Tensor x = Ramp(int64_t{1} << 20);  // 4 MiB (+ 4 MiB of room for the result)
  auto on = NewClient(mc::SharedMemoryMode::kOn, 64 << 10, 4 << 20);
  auto y = on->ScaleShift(x.view(), 2.0, 1.0);
  EXPECT_EQ(y.status().code(), absl::StatusCode::kResourceExhausted) << y.status();
  EXPECT_THAT(y.status().message(), HasSubstr("max_shared_memory_bytes"));
  auto automatic = NewClient(mc::SharedMemoryMode::kAuto, 16 << 20, 4 << 20);
  y = automatic->ScaleShift(x.view(), 2.0, 1.0);  // inline
  ASSERT_TRUE(y.ok()) << y.status();
  ExpectScaled(y->output.data(), int64_t{1} << 20, 2.0f, 1.0f);
  EXPECT_TRUE(Regions().empty());
}

}  // namespace
}  // namespace myops::server
