// A tensor beyond gRPC's 2 GiB message limit through the real myops-server binary: the
// C++ client's CallStreamSession sends myops::scale_shift a float32 input of 2^29 + 16
// elements (2 GiB + 64 bytes) in chunks and reassembles the chunked result. Labelled
// "large" (about 7 GiB of memory between client and server, about 20 s of copying):
// the sanitizer suite leaves it out.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>

#include "myops/client/client.h"
#include "server_process.h"

namespace myops::client {
namespace {

using server::testing::ServerProcess;

float Input(int64_t i) { return static_cast<float>(i % 4093) - 2000.0f; }

TEST(ClientCallLargeE2eTest, TensorAbove2GiBRoundTripsOnACallStream) {
  constexpr int64_t kElements = (int64_t{1} << 29) + 16;
  // One client holds about 4 GiB (input and result): more than the default share of the
  // default budget (a quarter of half the memory) on a small machine.
  ServerProcess server({"--address", "127.0.0.1:0", "--devices", "cpu", "--max-elements",
                        std::to_string(int64_t{1} << 30), "--max-client-share", "1"});
  const int port = server.WaitForPort();
  ASSERT_NE(port, 0) << server.output();
  ClientOptions options;
  options.target = "127.0.0.1:" + std::to_string(port);
  auto client = Client::Create(options);
  ASSERT_TRUE(client.ok()) << client.status();
  CallOptions call;
  call.deadline = std::chrono::seconds(300);
  auto stream = (*client)->OpenCallStream(call);
  ASSERT_TRUE(stream.ok()) << stream.status();

  const auto start = std::chrono::steady_clock::now();
  uint64_t id = 0;
  {
    std::string x(static_cast<size_t>(kElements) * 4, '\0');
    for (int64_t i = 0; i < kElements; ++i) {
      const float v = Input(i);
      std::memcpy(&x[static_cast<size_t>(i) * 4], &v, 4);
    }
    TensorView view{DType::kFloat32, {kElements}, x.data(), x.size()};
    auto sent = (*stream)->Send("myops::scale_shift", {view, 2.0, 0.5});
    ASSERT_TRUE(sent.ok()) << sent.status();
    id = *sent;
  }  // The input is freed once sent: only the result is held from here.
  auto r = (*stream)->Receive();
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->request_id, id);
  ASSERT_TRUE(r->result.ok()) << r->result.status();
  const TensorView y = r->result->outputs[0].tensor();
  ASSERT_EQ(y.shape, std::vector<int64_t>{kElements});
  ASSERT_EQ(y.size_bytes, static_cast<size_t>(kElements) * 4);
  const float* out = static_cast<const float*>(y.data);
  for (int64_t i : {int64_t{0}, int64_t{1}, int64_t{4093}, (int64_t{1} << 29) - 1, int64_t{1} << 29,
                    kElements - 1, int64_t{123456789}}) {
    EXPECT_EQ(out[i], 2.0f * Input(i) + 0.5f) << "element " << i;
  }
  for (int64_t i = 0; i < kElements; i += 4099) {
    if (out[i] != 2.0f * Input(i) + 0.5f) {
      ADD_FAILURE() << "element " << i << " is " << out[i];
      break;
    }
  }
  std::cout << "round trip of " << kElements * 4 << " bytes each way: "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()
            << " s\n";
  EXPECT_TRUE((*stream)->Close().ok());
}

}  // namespace
}  // namespace myops::client
