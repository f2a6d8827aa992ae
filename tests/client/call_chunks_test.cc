// The C++ client's side of CallStream's chunked tensors (client/cpp/src/call_codec.h):
// a chunked request's header and chunks are exactly what protobuf makes of the same
// messages, and chunked results are reassembled from the messages that follow them, a
// server that breaks the protocol or a stream that ends first giving that request an
// error.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "call_codec.h"
#include "myops/v1/myops.pb.h"
#include "myops/wire/tensor_wire.h"
#include "send_buffers.h"

namespace myops::client::internal {
namespace {

namespace v1 = ::myops::v1;
using ::testing::HasSubstr;

std::string Flat(const grpc::ByteBuffer& buffer) {
  std::string bytes;
  EXPECT_TRUE(wire::Flatten(buffer, &bytes));
  return bytes;
}

grpc::ByteBuffer Buffer(const google::protobuf::MessageLite& message) {
  grpc::Slice slice(message.SerializeAsString());
  return grpc::ByteBuffer(&slice, 1);
}

Tensor Floats(std::vector<int64_t> shape, size_t n, float first) {
  std::string bytes(n * 4, '\0');
  for (size_t i = 0; i < n; ++i) {
    const float v = first + static_cast<float>(i);
    std::memcpy(&bytes[i * 4], &v, 4);
  }
  return Tensor(DType::kFloat32, std::move(shape), std::move(bytes));
}

void ChunkedHead(const TensorView& t, v1::Tensor* out) {
  out->set_dtype(static_cast<v1::DType>(t.dtype));
  for (int64_t d : t.shape) out->add_shape(d);
  if (t.size_bytes != 0) out->set_chunked_byte_size(t.size_bytes);
}

TEST(CallChunksTest, HeaderAndChunksAreProtobufsBytes) {
  const Tensor x = Floats({2, 2}, 4, 1.0f), y = Floats({3}, 3, 5.0f), empty = Floats({0}, 0, 0);
  const std::vector<Value> args = {x.view(), 2.0, std::vector<TensorView>{empty.view(), y.view()}};
  CallFields call{"myops::op", args, {}, "cpu", 7};
  call.chunked = true;
  call.max_response_message_bytes = 5000;
  std::shared_ptr<SendBufferPool> owned = SendBufferPool::Create(0);
  SendBufferPool& pool = *owned;
  v1::CallRequest expected;
  expected.set_op("myops::op");
  ChunkedHead(x.view(), expected.add_arguments()->mutable_value()->mutable_tensor());
  expected.add_arguments()->mutable_value()->set_float_value(2.0);
  auto* list = expected.add_arguments()->mutable_value()->mutable_tensor_list();
  ChunkedHead(empty.view(), list->add_tensors());
  ChunkedHead(y.view(), list->add_tensors());
  expected.set_device("cpu");
  expected.set_request_id(7);
  expected.set_max_response_message_bytes(5000);
  EXPECT_EQ(Flat(EncodeCallRequest(call, pool)), expected.SerializeAsString());
  EXPECT_EQ(EncodedCallSize(call), expected.ByteSizeLong());

  const std::vector<TensorView> chunked = ChunkedTensors(call);
  ASSERT_EQ(chunked.size(), 2u);  // The empty tensor is not chunked.
  EXPECT_EQ(chunked[0].data, x.data());
  EXPECT_EQ(chunked[1].data, y.data());

  const std::string chunk = Flat(EncodeCallChunk(7, 1, 4, "abcde", 5, pool));
  EXPECT_EQ(static_cast<uint8_t>(chunk[0]), (6 << 3) | 2);  // The chunk field comes first.
  v1::CallRequest parsed;
  ASSERT_TRUE(parsed.ParseFromString(chunk));
  EXPECT_EQ(parsed.chunk().request_id(), 7u);
  EXPECT_EQ(parsed.chunk().tensor_index(), 1u);
  EXPECT_EQ(parsed.chunk().offset(), 4u);
  EXPECT_EQ(parsed.chunk().data(), "abcde");
  parsed.clear_chunk();
  EXPECT_EQ(parsed.ByteSizeLong(), 0u);
}

TEST(CallChunksTest, ValidationLetsTensorsExceedTheMessageOnAStream) {
  const Tensor x = Floats({1024}, 1024, 0.0f);
  const std::vector<Value> args = {x.view(), 1.0, 1.0};
  const CallFields call{"myops::scale_shift", args, {}, "", 1};
  absl::Status unary = ValidateCall(call, 1024);
  EXPECT_EQ(unary.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(unary.message(), HasSubstr("CallStream"));
  EXPECT_TRUE(ValidateCall(call, 1024, /*chunkable=*/true).ok());
}

class ChunkedReceiveTest : public ::testing::Test {
 protected:
  // A response of request 3 whose outputs are a chunked [4] float32 tensor and a list of
  // an inline tensor and a chunked [2] one.
  ChunkedReceiveTest() {
    response_.set_request_id(3);
    auto* outputs = response_.mutable_response()->mutable_outputs();
    ChunkedHead(a_.view(), outputs->Add()->mutable_tensor());
    auto* list = outputs->Add()->mutable_tensor_list();
    list->add_tensors()->set_dtype(v1::DTYPE_FLOAT32);
    list->mutable_tensors(0)->set_data(std::string(4, '\0'));
    ChunkedHead(b_.view(), list->add_tensors());
  }
  void QueueChunk(uint32_t index, uint64_t offset, const std::string& data, uint64_t id = 3) {
    v1::CallStreamResponse m;
    m.mutable_chunk()->set_request_id(id);
    m.mutable_chunk()->set_tensor_index(index);
    m.mutable_chunk()->set_offset(offset);
    m.mutable_chunk()->set_data(data);
    queue_.push_back(Buffer(m));
  }
  CallStreamResult Receive() {
    grpc::ByteBuffer message = Buffer(response_);
    return ReceiveCallStreamResponse(&message, [&] {
      if (queue_.empty()) return false;
      message = queue_.front();
      queue_.pop_front();
      return true;
    });
  }
  Tensor a_ = Floats({4}, 4, 10.0f), b_ = Floats({2}, 2, 20.0f);
  v1::CallStreamResponse response_;
  std::deque<grpc::ByteBuffer> queue_;
};

TEST_F(ChunkedReceiveTest, ChunkedResultsAreReassembled) {
  QueueChunk(0, 0, a_.bytes().substr(0, 5));
  QueueChunk(0, 5, a_.bytes().substr(5));
  QueueChunk(1, 0, b_.bytes());
  CallStreamResult r = Receive();
  ASSERT_TRUE(r.result.ok()) << r.result.status();
  EXPECT_EQ(r.request_id, 3u);
  EXPECT_EQ(r.result->outputs[0].TakeTensor().bytes(), a_.bytes());
  std::vector<Tensor> list = r.result->outputs[1].TakeTensorList();
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[1].bytes(), b_.bytes());
  EXPECT_TRUE(queue_.empty());
}

TEST_F(ChunkedReceiveTest, ProtocolBreaksAndEarlyEndsAreThatRequestsError) {
  QueueChunk(0, 4, a_.bytes());  // Wrong offset.
  CallStreamResult r = Receive();
  EXPECT_EQ(r.request_id, 3u);
  EXPECT_EQ(r.result.status().code(), absl::StatusCode::kInternal);
  queue_.clear();
  QueueChunk(0, 0, a_.bytes(), /*id=*/4);  // Another request's chunk.
  EXPECT_EQ(Receive().result.status().code(), absl::StatusCode::kInternal);
  queue_.clear();
  QueueChunk(0, 0, a_.bytes() + "x");  // Past the tensor's end.
  EXPECT_EQ(Receive().result.status().code(), absl::StatusCode::kInternal);
  queue_.clear();
  QueueChunk(0, 0, a_.bytes().substr(0, 8));  // Then the stream ends.
  r = Receive();
  EXPECT_EQ(r.result.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(r.result.status().message(), HasSubstr("8 of 16 bytes"));
  response_.mutable_response()->mutable_outputs(0)->mutable_tensor()->set_chunked_byte_size(12);
  r = Receive();  // A size its dtype and shape do not take.
  EXPECT_EQ(r.result.status().code(), absl::StatusCode::kInternal);
}

}  // namespace
}  // namespace myops::client::internal
