// CallStream's chunked tensors, the per-stream assembly alone (call_chunks.h): a header
// reserves its tensors' total at once, chunks fill them in order, and every hostile
// sequence (unknown ids, wrong offsets, overruns, too many unfinished requests, sizes
// that overflow, a stream closed early) gets its precise error, with what was held
// released.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "chunk_messages.h"
#include "frontends/myops_v1/call_chunks.h"
#include "frontends/myops_v1/call_codec.h"
#include "util/heap.h"

namespace myops::server {
namespace {

using myops::v1::CallRequest;
using testing::Chunk;
using testing::ChunkedHeader;
using Added = ChunkAssembly::Added;

grpc::ByteBuffer Bytes(const CallRequest& message) {
  const std::string s = message.SerializeAsString();
  grpc::Slice slice(s);
  return grpc::ByteBuffer(&slice, 1);
}

class ChunkAssemblyTest : public ::testing::Test {
 protected:
  ChunkAssemblyTest()
      : budget_(1 << 20), assembly_(TensorLimits{}, [this](int64_t n, BudgetReservation* out) {
          return budget_.TryReserve(n, out) ? absl::OkStatus()
                                            : absl::ResourceExhaustedError("over budget");
        }) {}

  absl::Status Start(uint64_t id, int64_t n) {
    CallRequest header = ChunkedHeader(id, n);
    auto sizes = FindChunkedTensors(header, TensorLimits{});
    EXPECT_TRUE(sizes.ok()) << sizes.status();
    ChunkAssembly::Request r;
    r.request = header;
    return assembly_.Start(std::move(r), *sizes);
  }
  Added Add(const CallRequest& chunk) { return assembly_.Add(Bytes(chunk), &done_, &id_, &error_); }

  MemoryBudget budget_;
  ChunkAssembly assembly_;
  ChunkAssembly::Request done_;
  uint64_t id_ = 0;
  absl::Status error_;
};

TEST_F(ChunkAssemblyTest, HeaderReservesTheTotalAndChunksFillIt) {
  ASSERT_TRUE(Start(7, 4).ok());
  EXPECT_EQ(budget_.held(), 16);  // From the header on, before any data.
  EXPECT_EQ(Add(Chunk(7, 0, 0, std::string("abcdefghij"))), Added::kConsumed);
  EXPECT_EQ(Add(Chunk(7, 0, 10, std::string("klmnop"))), Added::kComplete);
  EXPECT_EQ(assembly_.unfinished(), 0);
  EXPECT_EQ(done_.request.request_id(), 7u);
  auto args = DecodeArguments(done_.request, TensorLimits{}, nullptr, &done_.chunks);
  ASSERT_TRUE(args.ok()) << args.status();
  const TensorView& x = (*args)[0].value.tensor;
  EXPECT_EQ(std::string(static_cast<const char*>(x.data), 16), "abcdefghijklmnop");
  EXPECT_EQ(budget_.held(), 16);
  done_ = ChunkAssembly::Request();
  EXPECT_EQ(budget_.held(), 0);
}

TEST_F(ChunkAssemblyTest, ChunkOfUnknownRequest) {
  EXPECT_EQ(Add(Chunk(9, 0, 0, "x")), Added::kFailed);
  EXPECT_EQ(id_, 9u);
  EXPECT_EQ(error_.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(error_.message().find("no chunked tensor"), std::string::npos) << error_;
}

TEST_F(ChunkAssemblyTest, WrongOffsetFailsTheRequestAndDropsItsRest) {
  ASSERT_TRUE(Start(1, 4).ok());
  EXPECT_EQ(Add(Chunk(1, 0, 4, "abcd")), Added::kFailed);
  EXPECT_EQ(id_, 1u);
  EXPECT_EQ(error_.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(error_.message().find("expected tensor 0 at offset 0"), std::string::npos) << error_;
  EXPECT_EQ(budget_.held(), 0);
  // The rest of its 16 bytes is dropped silently; a chunk beyond them is an error again.
  EXPECT_EQ(Add(Chunk(1, 0, 8, "abcdefgh")), Added::kConsumed);
  EXPECT_EQ(Add(Chunk(1, 0, 12, "abcd")), Added::kConsumed);
  EXPECT_EQ(Add(Chunk(1, 0, 16, "a")), Added::kFailed);
  EXPECT_EQ(Add(Chunk(1, 1, 0, "a")), Added::kFailed);
}

// A chunk names its tensor: one for a tensor other than the one being filled (here a
// tensor the request does not have) fails the request, even at the right offset.
TEST_F(ChunkAssemblyTest, AChunkOfAnotherTensorFailsTheRequest) {
  ASSERT_TRUE(Start(1, 4).ok());
  EXPECT_EQ(Add(Chunk(1, 1, 0, "abcd")), Added::kFailed);
  EXPECT_EQ(id_, 1u);
  EXPECT_EQ(error_.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(error_.message().find("a chunk of chunked tensor 1 at offset 0; expected tensor 0"),
            std::string::npos)
      << error_;
  EXPECT_EQ(budget_.held(), 0);
}

// A chunked bool tensor obeys the rule of every bool tensor: each byte 0 or 1.
TEST_F(ChunkAssemblyTest, ABoolTensorWithAByteOtherThan0Or1IsRefused) {
  for (const char last : {'\1', '\2'}) {
    CallRequest header = ChunkedHeader(5, 4);
    auto* t = header.mutable_arguments(0)->mutable_value()->mutable_tensor();
    t->set_dtype(myops::v1::DTYPE_BOOL);
    t->set_chunked_byte_size(4);
    auto sizes = FindChunkedTensors(header, TensorLimits{});
    ASSERT_TRUE(sizes.ok()) << sizes.status();
    ChunkAssembly::Request r;
    r.request = header;
    ASSERT_TRUE(assembly_.Start(std::move(r), *sizes).ok());
    ASSERT_EQ(Add(Chunk(5, 0, 0, std::string("\0\1\0", 3) + last)), Added::kComplete);
    auto args = DecodeArguments(done_.request, TensorLimits{}, nullptr, &done_.chunks);
    if (last == '\1') {
      EXPECT_TRUE(args.ok()) << args.status();
      continue;
    }
    EXPECT_EQ(args.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(args.status().message().find("a bool tensor with a byte other than 0 or 1"),
              std::string::npos)
        << args.status();
  }
}

TEST_F(ChunkAssemblyTest, OverrunEmptyChunkAndOtherFields) {
  ASSERT_TRUE(Start(1, 4).ok());
  EXPECT_EQ(Add(Chunk(1, 0, 0, std::string(17, 'x'))), Added::kFailed);
  EXPECT_NE(error_.message().find("past its chunked_byte_size of 16"), std::string::npos) << error_;
  ASSERT_TRUE(Start(2, 4).ok());
  EXPECT_EQ(Add(Chunk(2, 0, 0, "")), Added::kFailed);
  EXPECT_NE(error_.message().find("without data"), std::string::npos) << error_;
  ASSERT_TRUE(Start(3, 4).ok());
  CallRequest mixed = Chunk(3, 0, 0, "abcd");
  mixed.set_op("myops::scale_shift");
  EXPECT_EQ(Add(mixed), Added::kFailed);
  EXPECT_EQ(error_.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(budget_.held(), 16);  // Request 3 is untouched.
}

TEST_F(ChunkAssemblyTest, TooManyUnfinishedAndDuplicateIds) {
  for (uint64_t id = 1; id <= kMaxChunkedPerStream; ++id) ASSERT_TRUE(Start(id, 4).ok());
  absl::Status more = Start(100, 4);
  EXPECT_EQ(more.code(), absl::StatusCode::kResourceExhausted) << more;
  EXPECT_EQ(budget_.held(), 16 * kMaxChunkedPerStream);
  // The refused request's chunks are dropped, not answered.
  EXPECT_EQ(Add(Chunk(100, 0, 0, std::string(16, 'x'))), Added::kConsumed);
  EXPECT_EQ(Start(1, 4).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(ChunkAssemblyTest, OverBudgetIsRefusedAtTheHeader) {
  absl::Status status = Start(1, 1 << 20);  // 4 MiB against 1 MiB
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted) << status;
  EXPECT_EQ(budget_.held(), 0);
  EXPECT_EQ(Add(Chunk(1, 0, 0, std::string(1024, 'x'))), Added::kConsumed);
}

TEST_F(ChunkAssemblyTest, RefusedHeadersChunksAreDropped) {
  assembly_.Refuse(8, 5);
  EXPECT_EQ(Add(Chunk(8, 0, 0, "abc")), Added::kConsumed);
  EXPECT_EQ(Add(Chunk(8, 0, 3, "de")), Added::kConsumed);
  EXPECT_EQ(Add(Chunk(8, 0, 5, "f")), Added::kFailed);  // Beyond what it announced.
  CallRequest bad = ChunkedHeader(9, 4);
  bad.mutable_arguments(0)->mutable_value()->mutable_tensor()->set_chunked_byte_size(~0ull);
  EXPECT_EQ(AnnouncedChunkedBytes(bad), ~0ull);
  EXPECT_EQ(AnnouncedChunkedBytes(ChunkedHeader(9, 4)), 16u);
}

TEST_F(ChunkAssemblyTest, UnfinishedRequestsAreAnsweredAndReleased) {
  ASSERT_TRUE(Start(5, 4).ok());
  EXPECT_EQ(Add(Chunk(5, 0, 0, "abcdefgh")), Added::kConsumed);
  uint64_t id = 0;
  absl::Status error;
  ASSERT_TRUE(assembly_.TakeUnfinished(&id, &error));
  EXPECT_EQ(id, 5u);
  EXPECT_EQ(error.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(error.message().find("8 of 16 bytes"), std::string::npos) << error;
  EXPECT_FALSE(assembly_.TakeUnfinished(&id, &error));
  EXPECT_EQ(budget_.held(), 0);
}

TEST(ChunkedSizesTest, MalformedHeadersAreRefused) {
  TensorLimits limits;
  limits.max_elements = std::numeric_limits<int64_t>::max();
  auto refused = [&](const CallRequest& r, const std::string& text) {
    auto sizes = FindChunkedTensors(r, limits);
    ASSERT_FALSE(sizes.ok());
    EXPECT_EQ(sizes.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(sizes.status().message().find(text), std::string::npos) << sizes.status();
  };
  CallRequest sum;  // two uint8 tensors of 2^62 bytes: the total overflows int64
  for (int i = 0; i < 2; ++i) {
    auto* t = sum.add_arguments()->mutable_value()->mutable_tensor();
    t->set_dtype(myops::v1::DTYPE_UINT8);
    t->add_shape(int64_t{1} << 62);
    t->set_chunked_byte_size(uint64_t{1} << 62);
  }
  refused(sum, "more bytes than fit in int64");
  CallRequest wrong = ChunkedHeader(1, 4);
  wrong.mutable_arguments(0)->mutable_value()->mutable_tensor()->set_chunked_byte_size(15);
  refused(wrong, "needs exactly 16");
  CallRequest both = ChunkedHeader(1, 4);
  both.mutable_arguments(0)->mutable_value()->mutable_tensor()->set_data("abcd");
  refused(both, "both data and chunked_byte_size");
  limits.max_elements = 3;
  refused(ChunkedHeader(1, 4), "this server's limit is 3");
  // Beyond max_message_bytes (the tensor limit's max_bytes) is fine: the budget decides.
  limits = TensorLimits{};
  limits.max_bytes = 8;
  auto sizes = FindChunkedTensors(ChunkedHeader(1, 4), limits);
  ASSERT_TRUE(sizes.ok()) << sizes.status();
  EXPECT_EQ(sizes->total, 16);
}

TEST(ChunkedSizesTest, ChunkedTensorOutsideAStreamIsRefused) {
  auto args = DecodeArguments(ChunkedHeader(1, 4), TensorLimits{});
  ASSERT_FALSE(args.ok());
  EXPECT_EQ(args.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(args.status().message().find("CallStream only"), std::string::npos) << args.status();
}

// The memory a result chunk message holds besides its data is what the pipeline reserves
// for it (kResultChunkMessageBytes): measured on the heap for the smallest pieces a client
// may ask for (the most messages per byte).
TEST(ResultChunksTest, EachMessageHoldsAtMostWhatIsReservedForIt) {
  const std::optional<int64_t> before = HeapInUseBytes();
  if (!before.has_value()) GTEST_SKIP() << "this allocator does not count (a sanitizer's)";
  constexpr int64_t kBytes = int64_t{16} << 20;
  auto memory = std::make_shared<std::vector<uint8_t>>(kBytes, 1);
  TensorView result{DType::kUInt8, {kBytes}, memory->data(), kBytes, memory};
  const std::optional<int64_t> held = HeapInUseBytes();
  std::vector<grpc::ByteBuffer> messages =
      EncodeResultChunks(grpc::ByteBuffer(), 7, {result}, kMinResponseMessageBytes);
  const std::optional<int64_t> built = HeapInUseBytes();
  ASSERT_TRUE(held.has_value() && built.has_value());
  const int64_t pieces = static_cast<int64_t>(messages.size()) - 1;
  ASSERT_EQ(pieces, (kBytes + ResultChunkDataBytes(kMinResponseMessageBytes) - 1) /
                        ResultChunkDataBytes(kMinResponseMessageBytes));
  const int64_t per_message = (*built - *held) / pieces;
  EXPECT_LE(per_message, kResultChunkMessageBytes);
  EXPECT_GT(per_message, 0);  // the measurement sees them
  RecordProperty("bytes_per_result_chunk_message", std::to_string(per_message));
}

TEST(ChunkMessageTest, RecognizedByItsFirstField) {
  EXPECT_TRUE(IsChunkMessage(Bytes(Chunk(1, 0, 0, "x"))));
  EXPECT_FALSE(IsChunkMessage(Bytes(ChunkedHeader(1, 4))));
  EXPECT_FALSE(IsChunkMessage(grpc::ByteBuffer()));
}

}  // namespace
}  // namespace myops::server
