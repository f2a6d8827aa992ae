// StreamSession against the in-process echo server: pipelined sends, concurrent send and
// receive, per-request validation, closing and cancelling.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "echo_test_server.h"
#include "myops/client/client.h"

namespace myops::client {
namespace {

using ::testing::HasSubstr;

// Distinct float32 tensors: element j of tensor i is i * 1000 + j.
Tensor NumberedTensor(int i, int64_t size = 16) {
  absl::StatusOr<Tensor> tensor = Tensor::Allocate(DType::kFloat32, {size});
  auto* data = static_cast<float*>(tensor->mutable_data());
  for (int64_t j = 0; j < size; ++j) data[j] = static_cast<float>(i * 1000 + j);
  return *std::move(tensor);
}

class ClientStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.ok());
    ClientOptions options;
    options.target = server_.target();
    absl::StatusOr<std::unique_ptr<Client>> client = Client::Create(options);
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = *std::move(client);
    absl::StatusOr<std::unique_ptr<StreamSession>> stream = client_->OpenStream();
    ASSERT_TRUE(stream.ok()) << stream.status();
    stream_ = *std::move(stream);
  }

  testing::EchoTestServer server_;
  std::unique_ptr<Client> client_;
  std::unique_ptr<StreamSession> stream_;
};

TEST_F(ClientStreamTest, FiftyPipelinedSendsThenReceives) {
  constexpr int kRequests = 50;
  std::map<uint64_t, std::string> sent;  // request id -> input bytes
  for (int i = 0; i < kRequests; ++i) {
    Tensor x = NumberedTensor(i);
    absl::StatusOr<uint64_t> id = stream_->Send(x.view(), 2.0, 1.0);
    ASSERT_TRUE(id.ok()) << id.status();
    EXPECT_EQ(*id, static_cast<uint64_t>(i + 1));
    sent[*id] = x.bytes();
  }
  ASSERT_TRUE(stream_->CloseSend().ok());
  std::set<uint64_t> seen;
  for (int i = 0; i < kRequests; ++i) {
    absl::StatusOr<StreamResult> result = stream_->Receive();
    ASSERT_TRUE(result.ok()) << result.status();
    ASSERT_TRUE(result->result.ok()) << result->result.status();
    EXPECT_TRUE(seen.insert(result->request_id).second) << "twice: " << result->request_id;
    ASSERT_EQ(sent.count(result->request_id), 1u);
    EXPECT_EQ(result->result->output.bytes(), sent[result->request_id]);
    EXPECT_EQ(result->result->timing.device, "echo");
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(kRequests));
  absl::StatusOr<StreamResult> end = stream_->Receive();
  EXPECT_EQ(end.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_THAT(end.status().message(), HasSubstr("all 50 responses"));
  EXPECT_TRUE(stream_->Close().ok());
  EXPECT_EQ(stream_->discarded_responses(), 0);
}

TEST_F(ClientStreamTest, SendAndReceiveOnTwoThreads) {
  constexpr int kRequests = 200;
  std::thread sender([&] {
    for (int i = 0; i < kRequests; ++i) {
      Tensor x = NumberedTensor(i, 256);
      ASSERT_TRUE(stream_->Send(x.view(), 2.0, 1.0).ok());
    }
    ASSERT_TRUE(stream_->CloseSend().ok());
  });
  std::set<uint64_t> seen;
  for (;;) {
    absl::StatusOr<StreamResult> result = stream_->Receive();
    if (!result.ok()) {
      EXPECT_EQ(result.status().code(), absl::StatusCode::kOutOfRange) << result.status();
      break;
    }
    ASSERT_TRUE(result->result.ok()) << result->result.status();
    const auto* data = static_cast<const float*>(result->result->output.data());
    EXPECT_EQ(data[0], static_cast<float>((result->request_id - 1) * 1000));
    seen.insert(result->request_id);
  }
  sender.join();
  EXPECT_EQ(seen.size(), static_cast<size_t>(kRequests));
}

TEST_F(ClientStreamTest, InvalidInputIsRejectedAndTheStreamGoesOn) {
  absl::StatusOr<uint64_t> bad = stream_->Send(TensorView{DType::kFloat32, {3}, nullptr, 4}, 1, 0);
  ASSERT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("input: size_bytes is 4"));
  Tensor x = NumberedTensor(7);
  absl::StatusOr<uint64_t> id = stream_->Send(x.view(), 2.0, 1.0);
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(*id, 1u);  // Rejected sends use no id.
  absl::StatusOr<StreamResult> result = stream_->Receive();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->request_id, 1u);
  EXPECT_TRUE(stream_->Close().ok());
}

TEST_F(ClientStreamTest, SendAfterCloseSendFails) {
  ASSERT_TRUE(stream_->CloseSend().ok());
  ASSERT_TRUE(stream_->CloseSend().ok());  // Idempotent.
  Tensor x = NumberedTensor(1);
  absl::StatusOr<uint64_t> id = stream_->Send(x.view(), 2.0, 1.0);
  EXPECT_EQ(id.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(id.status().message(), HasSubstr("closed for sending"));
}

TEST_F(ClientStreamTest, CloseDiscardsResponsesNotReceived) {
  for (int i = 0; i < 5; ++i) {
    Tensor x = NumberedTensor(i);
    ASSERT_TRUE(stream_->Send(x.view(), 2.0, 1.0).ok());
  }
  EXPECT_TRUE(stream_->Close().ok());
  EXPECT_EQ(stream_->discarded_responses(), 5);
  EXPECT_TRUE(stream_->Close().ok());  // Idempotent.
  EXPECT_EQ(stream_->Receive().status().code(), absl::StatusCode::kOutOfRange);
}

TEST_F(ClientStreamTest, DestroyingAnOpenStreamCancelsIt) {
  Tensor x = NumberedTensor(1);
  ASSERT_TRUE(stream_->Send(x.view(), 2.0, 1.0).ok());
  stream_.reset();  // Must not hang.
  // The client is still usable.
  EXPECT_TRUE(client_->ScaleShift(x.view(), 2.0, 1.0).ok());
}

TEST_F(ClientStreamTest, SessionDeadlineEndsTheStream) {
  CallOptions call;
  call.deadline = std::chrono::milliseconds(0);
  absl::StatusOr<std::unique_ptr<StreamSession>> stream = client_->OpenStream(call);
  ASSERT_TRUE(stream.ok());
  EXPECT_EQ((*stream)->Receive().status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ((*stream)->Close().code(), absl::StatusCode::kDeadlineExceeded);
}

// A server that reads nothing holds the client's writes in flow control, as the myops
// server does while its responses are not received: Send blocks until the session's
// deadline and then says why, instead of an unexplained failure.
TEST(ClientStreamFlowControlTest, SendHeldUntilTheDeadlineSaysWhy) {
  testing::StallingTestServer server;
  ASSERT_TRUE(server.ok());
  ClientOptions options;
  options.target = server.target();
  options.default_deadline = std::chrono::seconds(1);
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Create(options);
  ASSERT_TRUE(client.ok()) << client.status();
  absl::StatusOr<std::unique_ptr<StreamSession>> stream = (*client)->OpenStream();
  ASSERT_TRUE(stream.ok());
  Tensor x = NumberedTensor(0, 64 << 10);  // 256 KiB per request.
  absl::Status failure;
  for (int i = 0; i < 1024 && failure.ok(); ++i) {  // At most 256 MiB: far past any window.
    failure = (*stream)->Send(x.view(), 2.0, 1.0).status();
  }
  EXPECT_EQ(failure.code(), absl::StatusCode::kDeadlineExceeded) << failure;
  EXPECT_THAT(failure.message(), HasSubstr("was not sent before the stream's deadline"));
  EXPECT_THAT(failure.message(), HasSubstr("responses were not received"));
  EXPECT_THAT(failure.message(), HasSubstr("call Receive() (on another thread) while sending"));
  EXPECT_EQ((*stream)->Close().code(), absl::StatusCode::kDeadlineExceeded);
}

// Requests far past the flow-control windows: the sender's writes wait for the receiver's
// reads, the two threads waiting on the stream's progress in turn. (Not in the TSan run,
// tests/sanitizers/tsan_tests.regex: its megabytes take minutes under TSan.)
TEST(ClientStreamFlowControlTest, SendHeldGoesOnWhileAnotherThreadReceives) {
  testing::EchoTestServer server;
  ASSERT_TRUE(server.ok());
  ClientOptions options;
  options.target = server.target();
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Create(options);
  ASSERT_TRUE(client.ok()) << client.status();
  absl::StatusOr<std::unique_ptr<StreamSession>> stream = (*client)->OpenStream();
  ASSERT_TRUE(stream.ok()) << stream.status();
  StreamSession* const session = stream->get();
  constexpr int kRequests = 48;
  std::thread sender([&] {
    for (int i = 0; i < kRequests; ++i) {
      Tensor x = NumberedTensor(i, 256 << 10);  // 1 MiB per request.
      ASSERT_TRUE(session->Send(x.view(), 2.0, 1.0).ok());
    }
    ASSERT_TRUE(session->CloseSend().ok());
  });
  int received = 0;
  for (absl::StatusOr<StreamResult> result = session->Receive(); result.ok();
       result = session->Receive()) {
    ++received;
    if (!result->result.ok()) {  // No ASSERT: the sender is still to be joined.
      ADD_FAILURE() << result->result.status();
      continue;
    }
    const auto* data = static_cast<const float*>(result->result->output.data());
    EXPECT_EQ(data[1], static_cast<float>((result->request_id - 1) * 1000 + 1));
  }
  sender.join();
  EXPECT_EQ(received, kRequests);
  EXPECT_TRUE(session->Close().ok());
}

}  // namespace
}  // namespace myops::client
