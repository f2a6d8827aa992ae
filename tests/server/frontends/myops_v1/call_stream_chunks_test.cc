// Chunked tensors on CallStream against the real server in-process, as raw messages: the
// memory budget is held from the header on and released by completion, errors, the
// client closing its side, the stream being cancelled or its chunks stopping for longer
// than the stall timeout; hostile chunk sequences get an Error response each and the
// stream goes on; results come chunked when the client takes them; the C++ client chunks
// every tensor of a call, in order. (The C++ client's chunked round trip:
// tests/client/client_call_e2e_test.cc.)
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "chunk_messages.h"
#include "frontends/myops_v1/call_chunks.h"
#include "frontends/myops_v1/call_codec.h"
#include "myops/client/client.h"
#include "test_server.h"

namespace myops::server {
namespace {

using myops::v1::CallRequest;
using myops::v1::CallStreamResponse;
using testing::Chunk;
using testing::ChunkedHeader;

std::string Floats(int64_t n, float first) {
  std::string s(static_cast<size_t>(n) * 4, '\0');
  for (int64_t i = 0; i < n; ++i) {
    const float v = first + static_cast<float>(i % 1000);
    std::memcpy(&s[static_cast<size_t>(i) * 4], &v, 4);
  }
  return s;
}

class CallStreamChunksTest : public ::testing::Test {
 protected:
  void Start(int64_t budget_bytes, int64_t stall_timeout_ms = 10000) {
    ServerOptions options = testing::LoopbackOptions();
    options.executor.ops = "myops::*,aten::add.Tensor";
    options.limits.max_inflight_bytes = budget_bytes;
    options.limits.stall_timeout_ms = stall_timeout_ms;
    options.limits.tensor.max_elements = int64_t{1} << 22;
    t_ = testing::StartServer(options);
    ASSERT_TRUE(t_.server);
  }
  int64_t Held() const { return t_.server->pipeline().budget().held(); }
  // Polls until the budget is idle (released in OnDone, after the client sees the end).
  void ExpectIdle() {
    for (int i = 0; i < 200 && Held() != 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_EQ(Held(), 0);
  }
  testing::TestServer t_;
};

TEST_F(CallStreamChunksTest, BudgetIsHeldFromTheHeaderAndRefusedBeyondIt) {
  Start(int64_t{12} << 20);
  grpc::ClientContext ctx;
  auto stream = t_.stub->CallStream(&ctx);
  // 4 MiB announced: held at once, before any chunk.
  ASSERT_TRUE(stream->Write(ChunkedHeader(1, int64_t{1} << 20)));
  for (int i = 0; i < 200 && Held() < (int64_t{4} << 20); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_GE(Held(), int64_t{4} << 20);
  // 16 MiB announced: over the whole budget, refused with its name; its chunks dropped.
  ASSERT_TRUE(stream->Write(ChunkedHeader(2, int64_t{4} << 20)));
  CallStreamResponse response;
  ASSERT_TRUE(stream->Read(&response));
  EXPECT_EQ(response.request_id(), 2u);
  EXPECT_EQ(response.error().code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(response.error().message().find("--max-inflight-bytes"), std::string::npos)
      << response.error().message();
  ASSERT_TRUE(stream->Write(Chunk(2, 0, 0, std::string(1 << 20, 'x'))));
  // Too many elements: INVALID_ARGUMENT, as for any tensor; its chunks are dropped too.
  ASSERT_TRUE(stream->Write(ChunkedHeader(3, (int64_t{1} << 22) + 1)));
  ASSERT_TRUE(stream->Read(&response));
  EXPECT_EQ(response.request_id(), 3u);
  EXPECT_EQ(response.error().code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(response.error().message().find("this server's limit is"), std::string::npos)
      << response.error().message();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(stream->Write(Chunk(3, 0, i, "abc")));
  // Request 1 completes and is answered.
  const std::string x = Floats(int64_t{1} << 20, 0.0f);
  for (size_t off = 0; off < x.size(); off += 1 << 20) {
    ASSERT_TRUE(stream->Write(Chunk(1, 0, off, x.substr(off, 1 << 20))));
  }
  ASSERT_TRUE(stream->Read(&response));
  EXPECT_EQ(response.request_id(), 1u);
  ASSERT_TRUE(response.has_response()) << response.error().message();
  EXPECT_EQ(response.response().outputs(0).tensor().data().size(), x.size());
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
  ExpectIdle();
}

TEST_F(CallStreamChunksTest, HeaderTheBudgetRefusesBeforeParsingDropsItsChunks) {
  constexpr int64_t kBudget = int64_t{8} << 20;
  Start(kBudget);
  // Request 1 takes all of the budget but less than another header needs.
  const int64_t head = static_cast<int64_t>(ChunkedHeader(1, kBudget / 4).ByteSizeLong());
  // What a header reserves (a small message: all of it taken as head).
  const int64_t reserved =
      CallParseReservation(static_cast<uint64_t>(head), static_cast<uint64_t>(head));
  const int64_t n = (kBudget - reserved - 40) / 4;
  grpc::ClientContext ctx;
  auto stream = t_.stub->CallStream(&ctx);
  ASSERT_TRUE(stream->Write(ChunkedHeader(1, n)));
  ASSERT_TRUE(stream->Write(ChunkedHeader(2, 4)));
  CallStreamResponse response;
  ASSERT_TRUE(stream->Read(&response));
  EXPECT_EQ(response.request_id(), 2u);
  EXPECT_EQ(response.error().code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  ASSERT_TRUE(stream->Write(Chunk(2, 0, 0, std::string(16, 'x'))));  // dropped
  ASSERT_TRUE(stream->Write(Chunk(1, 0, 0, std::string(static_cast<size_t>(n) * 4, 'x'))));
  ASSERT_TRUE(stream->Read(&response));
  EXPECT_EQ(response.request_id(), 1u);  // (its result does not fit the budget either)
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
  ExpectIdle();
}

TEST_F(CallStreamChunksTest, HostileChunksGetErrorsAndTheStreamGoesOn) {
  Start(int64_t{64} << 20);
  grpc::ClientContext ctx;
  auto stream = t_.stub->CallStream(&ctx);
  CallStreamResponse response;
  auto expect_error = [&](uint64_t id, grpc::StatusCode code, const std::string& text) {
    ASSERT_TRUE(stream->Read(&response));
    EXPECT_EQ(response.request_id(), id);
    EXPECT_EQ(response.error().code(), code) << response.error().message();
    EXPECT_NE(response.error().message().find(text), std::string::npos)
        << response.error().message();
  };
  ASSERT_TRUE(stream->Write(Chunk(42, 0, 0, "abcd")));
  expect_error(42, grpc::StatusCode::INVALID_ARGUMENT, "no chunked tensor");
  ASSERT_TRUE(stream->Write(ChunkedHeader(1, 4)));
  ASSERT_TRUE(stream->Write(Chunk(1, 0, 8, "abcdefgh")));
  expect_error(1, grpc::StatusCode::INVALID_ARGUMENT, "expected tensor 0 at offset 0");
  ASSERT_TRUE(stream->Write(ChunkedHeader(2, 4)));
  ASSERT_TRUE(stream->Write(Chunk(2, 0, 0, std::string(20, 'x'))));
  expect_error(2, grpc::StatusCode::INVALID_ARGUMENT, "past its chunked_byte_size");
  for (uint64_t id = 10; id < 10 + 4; ++id) ASSERT_TRUE(stream->Write(ChunkedHeader(id, 4)));
  ASSERT_TRUE(stream->Write(ChunkedHeader(20, 4)));
  expect_error(20, grpc::StatusCode::RESOURCE_EXHAUSTED, "chunked requests are still receiving");
  // Still serving: an ordinary request; then closing answers the 4 unfinished ones.
  CallRequest plain = ChunkedHeader(30, 4);
  auto* t = plain.mutable_arguments(0)->mutable_value()->mutable_tensor();
  t->set_chunked_byte_size(0);
  t->set_data(Floats(4, 1.0f));
  ASSERT_TRUE(stream->Write(plain));
  ASSERT_TRUE(stream->Read(&response));
  EXPECT_EQ(response.request_id(), 30u);
  EXPECT_TRUE(response.has_response()) << response.error().message();
  stream->WritesDone();
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(stream->Read(&response));
    EXPECT_EQ(response.error().code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(response.error().message().find("closed the stream's sending side"),
              std::string::npos);
  }
  EXPECT_TRUE(stream->Finish().ok());
  ExpectIdle();
}

TEST_F(CallStreamChunksTest, ResultsComeChunkedWhenTheClientTakesThem) {
  Start(int64_t{64} << 20);
  grpc::ClientContext ctx;
  auto stream = t_.stub->CallStream(&ctx);
  CallRequest request = ChunkedHeader(5, 4096);  // 16 KiB in and out
  auto* t = request.mutable_arguments(0)->mutable_value()->mutable_tensor();
  t->set_chunked_byte_size(0);
  t->set_data(Floats(4096, 0.0f));
  request.set_max_response_message_bytes(4096);
  ASSERT_TRUE(stream->Write(request));
  CallStreamResponse response;
  ASSERT_TRUE(stream->Read(&response));
  ASSERT_TRUE(response.has_response()) << response.error().message();
  const myops::v1::Tensor& y = response.response().outputs(0).tensor();
  EXPECT_TRUE(y.data().empty());
  ASSERT_EQ(y.chunked_byte_size(), 16384u);
  std::string data;
  while (data.size() < y.chunked_byte_size()) {
    CallStreamResponse chunk;
    ASSERT_TRUE(stream->Read(&chunk));
    ASSERT_TRUE(chunk.has_chunk());
    EXPECT_FALSE(chunk.has_response());
    EXPECT_LE(chunk.ByteSizeLong(), 4096u);
    EXPECT_EQ(chunk.chunk().request_id(), 5u);
    EXPECT_EQ(chunk.chunk().tensor_index(), 0u);
    EXPECT_EQ(chunk.chunk().offset(), data.size());
    data += chunk.chunk().data();
  }
  ASSERT_EQ(data.size(), 16384u);
  float v;
  std::memcpy(&v, &data[4 * 999], 4);
  EXPECT_EQ(v, 2.0f * 999.0f + 1.0f);
  // A limit too small to be useful is refused; without one, the result comes whole.
  request.set_max_response_message_bytes(100);
  ASSERT_TRUE(stream->Write(request));
  ASSERT_TRUE(stream->Read(&response));
  EXPECT_EQ(response.error().code(), grpc::StatusCode::INVALID_ARGUMENT);
  request.set_max_response_message_bytes(0);
  ASSERT_TRUE(stream->Write(request));
  ASSERT_TRUE(stream->Read(&response));
  ASSERT_TRUE(response.has_response()) << response.error().message();
  EXPECT_EQ(response.response().outputs(0).tensor().data(), data);
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
  ExpectIdle();
}

// Chunked results are built as messages all at once: what each message holds besides its
// data is reserved with the results, not left outside the budget. Held while the client
// has read only the head (flow control holds the rest of the 4 MiB on the server).
TEST_F(CallStreamChunksTest, ResultChunkMessagesAreReservedWithTheResults) {
  Start(int64_t{64} << 20);
  grpc::ClientContext ctx;
  auto stream = t_.stub->CallStream(&ctx);
  constexpr int64_t kFloats = int64_t{1} << 20;  // 4 MiB in and out
  CallRequest request = ChunkedHeader(9, kFloats);
  auto* t = request.mutable_arguments(0)->mutable_value()->mutable_tensor();
  t->set_chunked_byte_size(0);
  t->set_data(Floats(kFloats, 0.0f));
  request.set_max_response_message_bytes(kMinResponseMessageBytes);
  ASSERT_TRUE(stream->Write(request));
  CallStreamResponse response;
  ASSERT_TRUE(stream->Read(&response));
  ASSERT_TRUE(response.has_response()) << response.error().message();
  const int64_t bytes = 4 * kFloats;
  const int64_t piece = ResultChunkDataBytes(kMinResponseMessageBytes);
  const int64_t messages = (bytes + piece - 1) / piece;
  // The request as received and parsed, the result, and its messages' own memory.
  EXPECT_GE(Held(), 2 * bytes + bytes + messages * kResultChunkMessageBytes);
  ctx.TryCancel();
  (void)stream->Finish();
  ExpectIdle();
}

TEST_F(CallStreamChunksTest, ClientChunksEveryTensorInOrder) {
  Start(int64_t{64} << 20);
  client::ClientOptions options;
  options.target = t_.address;
  options.max_message_bytes = 64 << 10;
  auto c = client::Client::Create(options);
  ASSERT_TRUE(c.ok()) << c.status();
  auto stream = (*c)->OpenCallStream();
  ASSERT_TRUE(stream.ok()) << stream.status();
  const int64_t n = 100000;  // 400 KB each: both arguments and the result go chunked
  const std::string x = Floats(n, 0.0f), y = Floats(n, 0.5f);
  using client::DType;
  using client::TensorView;
  auto id =
      (*stream)->Send("aten::add.Tensor", {TensorView{DType::kFloat32, {n}, x.data(), x.size()},
                                           TensorView{DType::kFloat32, {n}, y.data(), y.size()}});
  ASSERT_TRUE(id.ok()) << id.status();
  auto r = (*stream)->Receive();
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->result.ok()) << r->result.status();
  const TensorView z = r->result->outputs[0].tensor();
  ASSERT_EQ(z.size_bytes, x.size());
  const float* out = static_cast<const float*>(z.data);
  for (int64_t i = 0; i < n; i += 997) {
    EXPECT_EQ(out[i], 2.0f * static_cast<float>(i % 1000) + 0.5f) << "element " << i;
  }
  EXPECT_TRUE((*stream)->Close().ok());
  ExpectIdle();
}

TEST_F(CallStreamChunksTest, CancelledStreamReleasesWhatItHeld) {
  Start(int64_t{64} << 20);
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
    auto stream = t_.stub->CallStream(&ctx);
    ASSERT_TRUE(stream->Write(ChunkedHeader(1, int64_t{1} << 20)));
    ASSERT_TRUE(stream->Write(Chunk(1, 0, 0, std::string(1000, 'x'))));
    CallStreamResponse response;
    EXPECT_FALSE(stream->Read(&response));  // Its chunks never come: the deadline ends it.
    EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  }
  ExpectIdle();
}

// A header whose chunks stop coming: after --stall-timeout-ms without a chunk the stream
// ends with DEADLINE_EXCEEDED naming the flag, and the budget it held returns.
TEST_F(CallStreamChunksTest, ChunksThatStopComingEndTheStreamAndReturnTheBudget) {
  Start(int64_t{64} << 20, /*stall_timeout_ms=*/300);
  grpc::ClientContext ctx;
  // Without the stall watch the client's own deadline ends it, without the flag's name.
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  auto stream = t_.stub->CallStream(&ctx);
  constexpr int64_t n = int64_t{1} << 20;  // 4 MiB announced
  ASSERT_TRUE(stream->Write(ChunkedHeader(1, n)));
  ASSERT_TRUE(stream->Write(Chunk(1, 0, 0, std::string(1 << 20, 'x'))));  // a quarter
  for (int i = 0; i < 200 && Held() < n * 4; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_GE(Held(), n * 4);
  const auto start = std::chrono::steady_clock::now();
  CallStreamResponse response;
  EXPECT_FALSE(stream->Read(&response));
  const grpc::Status status = stream->Finish();
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(200));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << status.error_message();
  EXPECT_NE(status.error_message().find("--stall-timeout-ms"), std::string::npos)
      << status.error_message();
  ExpectIdle();
  EXPECT_NE(t_.server->pipeline().metrics().Render().find("myops_streams_stalled_total 1"),
            std::string::npos);
}

// Chunks that keep coming, each within the timeout of the last, are progress however
// long the whole request takes.
TEST_F(CallStreamChunksTest, ChunksThatKeepComingAreNotAStall) {
  Start(int64_t{64} << 20, /*stall_timeout_ms=*/400);
  grpc::ClientContext ctx;
  auto stream = t_.stub->CallStream(&ctx);
  const std::string x = Floats(int64_t{1} << 16, 0.0f);  // 256 KiB in 8 chunks, 0.8 s
  ASSERT_TRUE(stream->Write(ChunkedHeader(1, int64_t{1} << 16)));
  for (size_t off = 0; off < x.size(); off += x.size() / 8) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ASSERT_TRUE(stream->Write(Chunk(1, 0, off, x.substr(off, x.size() / 8))));
  }
  CallStreamResponse response;
  ASSERT_TRUE(stream->Read(&response));
  EXPECT_EQ(response.request_id(), 1u);
  ASSERT_TRUE(response.has_response()) << response.error().message();
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
  ExpectIdle();
}

// Responses the client does not take: once a write has waited --stall-timeout-ms for
// the client's flow control, the stream is cancelled and the budget its responses held
// returns, while the client still reads nothing.
TEST_F(CallStreamChunksTest, ResponsesNotTakenEndTheStreamAndReturnTheBudget) {
  Start(int64_t{512} << 20, /*stall_timeout_ms=*/300);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  auto stream = t_.stub->CallStream(&ctx);
  constexpr int64_t n = int64_t{4} << 20;  // 16 MiB in, 16 MiB out, per request
  const std::string x(static_cast<size_t>(n) * 4, '\0');
  for (uint64_t id = 1; id <= 2; ++id) {  // the stream's read-ahead takes both
    CallRequest request = ChunkedHeader(id, n);
    auto* t = request.mutable_arguments(0)->mutable_value()->mutable_tensor();
    t->set_chunked_byte_size(0);
    t->set_data(x);
    ASSERT_TRUE(stream->Write(request));
  }
  // Held while the first responses wait for the client, then returned.
  bool held = false;
  for (int i = 0; i < 400 && !(held && Held() == 0); ++i) {
    held |= Held() > 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(held);
  EXPECT_EQ(Held(), 0);
  EXPECT_NE(t_.server->pipeline().metrics().Render().find("myops_streams_stalled_total 1"),
            std::string::npos);
  CallStreamResponse response;
  while (stream->Read(&response)) {
  }
  EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::CANCELLED);
}

TEST_F(CallStreamChunksTest, UnaryCallRefusesChunkedTensors) {
  Start(int64_t{64} << 20);
  grpc::ClientContext ctx;
  myops::v1::CallResponse response;
  grpc::Status status = t_.stub->Call(&ctx, ChunkedHeader(1, 4), &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("CallStream only"), std::string::npos)
      << status.error_message();
}

}  // namespace
}  // namespace myops::server
