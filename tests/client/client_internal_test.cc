// Unit tests of the client's internals (client/cpp/src): status conversion, retry backoff,
// the hand-encoded grpc.health.v1 messages, the unary wire codec and the send buffers.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "codec.h"
#include "echo_test_server.h"
#include "grpc_status.h"
#include "health.h"
#include "myops/client/client.h"
#include "myops/wire/tensor_wire.h"
#include "retry.h"
#include "send_buffers.h"
#include "shm_pool.h"

namespace myops::client::internal {
namespace {

using std::chrono::milliseconds;

TEST(ClientStatusTest, KeepsCodeAndMessage) {
  EXPECT_TRUE(ToAbslStatus(grpc::Status::OK).ok());
  const absl::Status status =
      ToAbslStatus(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "dims must be >= 0"));
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "dims must be >= 0");
  for (int code = 1; code <= 16; ++code) {
    EXPECT_EQ(static_cast<int>(
                  ToAbslStatus(grpc::Status(static_cast<grpc::StatusCode>(code), "x")).code()),
              code);
  }
  const absl::Status odd = ToAbslStatus(42, "odd");  // E.g. a stream Error's code.
  EXPECT_EQ(odd.code(), absl::StatusCode::kUnknown);
  EXPECT_THAT(odd.message(), ::testing::HasSubstr("odd (non-canonical gRPC status code 42)"));
  EXPECT_EQ(ToAbslStatus(-1, "negative").code(), absl::StatusCode::kUnknown);
  EXPECT_TRUE(ToAbslStatus(0, "").ok());
}

TEST(ClientRetryTest, BackoffGrowsAndIsCapped) {
  RetryPolicy policy;
  policy.initial_backoff = milliseconds(100);
  policy.max_backoff = milliseconds(1000);
  policy.multiplier = 3.0;
  EXPECT_EQ(BaseBackoff(policy, 1), milliseconds(100));
  EXPECT_EQ(BaseBackoff(policy, 2), milliseconds(300));
  EXPECT_EQ(BaseBackoff(policy, 3), milliseconds(900));
  EXPECT_EQ(BaseBackoff(policy, 4), milliseconds(1000));
  EXPECT_EQ(BaseBackoff(policy, 60), milliseconds(1000));
}

TEST(ClientRetryTest, OnlyUnavailableIsRetriedWithJitterWithinTheDeadline) {
  RetryPolicy policy;
  policy.max_attempts = 3;
  policy.initial_backoff = milliseconds(100);
  const Clock::time_point later = Clock::now() + std::chrono::hours(1);
  for (int i = 0; i < 100; ++i) {
    std::optional<std::chrono::nanoseconds> delay =
        NextRetryDelay(policy, 1, grpc::StatusCode::UNAVAILABLE, later);
    ASSERT_TRUE(delay.has_value());
    EXPECT_GE(*delay, milliseconds(50));
    EXPECT_LE(*delay, milliseconds(100));
  }
  EXPECT_FALSE(NextRetryDelay(policy, 3, grpc::StatusCode::UNAVAILABLE, later));  // Used up.
  EXPECT_FALSE(NextRetryDelay(policy, 1, grpc::StatusCode::DEADLINE_EXCEEDED, later));
  EXPECT_FALSE(NextRetryDelay(policy, 1, grpc::StatusCode::INTERNAL, later));
  EXPECT_FALSE(NextRetryDelay(policy, 1, grpc::StatusCode::OK, later));
  EXPECT_FALSE(NextRetryDelay(policy, 1, grpc::StatusCode::UNAVAILABLE,
                              Clock::now() + milliseconds(10)));  // Past the deadline.
}

TEST(ClientRetryTest, CallWithRetriesMakesMaxAttempts) {
  RetryPolicy policy;
  policy.max_attempts = 4;
  policy.initial_backoff = milliseconds(1);
  policy.max_backoff = milliseconds(2);
  int attempts = 0;
  grpc::Status status = CallWithRetries(policy, Clock::now() + std::chrono::seconds(30),
                                        [&](grpc::ClientContext* context) {
                                          EXPECT_NE(context, nullptr);
                                          ++attempts;
                                          return grpc::Status(grpc::StatusCode::UNAVAILABLE, "");
                                        });
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(attempts, 4);

  attempts = 0;
  status =
      CallWithRetries(policy, Clock::now() + std::chrono::seconds(30), [&](grpc::ClientContext*) {
        return ++attempts < 2 ? grpc::Status(grpc::StatusCode::UNAVAILABLE, "") : grpc::Status::OK;
      });
  EXPECT_TRUE(status.ok());
  EXPECT_EQ(attempts, 2);
}

std::string Bytes(const grpc::ByteBuffer& buffer) {
  std::string out;
  EXPECT_TRUE(wire::Flatten(buffer, &out));
  return out;
}

grpc::ByteBuffer Buffer(const std::string& bytes) {
  grpc::Slice slice(bytes);
  return grpc::ByteBuffer(&slice, 1);
}

TEST(ClientHealthCodecTest, EncodesTheServiceName) {
  EXPECT_EQ(Bytes(EncodeHealthCheckRequest("")), "");
  EXPECT_EQ(Bytes(EncodeHealthCheckRequest("myops.v1.Myops")),
            std::string("\x0a\x0e") + "myops.v1.Myops");
  const std::string long_name(200, 'a');  // Two-byte length varint.
  EXPECT_EQ(Bytes(EncodeHealthCheckRequest(long_name)), std::string("\x0a\xc8\x01") + long_name);
}

TEST(ClientHealthCodecTest, DecodesTheStatusAndSkipsUnknownFields) {
  EXPECT_EQ(*DecodeHealthCheckResponse(Buffer("")), ServingStatus::kUnknown);
  EXPECT_EQ(*DecodeHealthCheckResponse(Buffer(std::string("\x08\x01", 2))),
            ServingStatus::kServing);
  EXPECT_EQ(*DecodeHealthCheckResponse(Buffer(std::string("\x08\x02", 2))),
            ServingStatus::kNotServing);
  // Unknown fields 2 (string "hi") and 3 (fixed32) around the status.
  EXPECT_EQ(
      *DecodeHealthCheckResponse(Buffer(std::string("\x12\x02hi\x08\x01\x1d\x01\x02\x03\x04", 11))),
      ServingStatus::kServing);
  EXPECT_EQ(DecodeHealthCheckResponse(Buffer(std::string("\x08", 1))).status().code(),
            absl::StatusCode::kInternal);  // Truncated varint.
  EXPECT_EQ(DecodeHealthCheckResponse(Buffer(std::string("\x12\x09hi", 4))).status().code(),
            absl::StatusCode::kInternal);  // Length beyond the end.
}

// As protobuf reads them (a fuzzer compared the decoder with protobuf's parser): unknown
// fields may be groups, and the status is an open enum, an int32 whatever the varint's
// length, so 2^32 + 1 reads as 1 (SERVING).
TEST(ClientHealthCodecTest, DecodesLikeProtobuf) {
  // Group 5 {varint field 1 = 2}, then status 1.
  EXPECT_EQ(*DecodeHealthCheckResponse(Buffer(std::string("\x2b\x08\x02\x2c\x08\x01", 6))),
            ServingStatus::kServing);
  EXPECT_EQ(*DecodeHealthCheckResponse(Buffer(std::string("\x08\x81\x80\x80\x80\x10", 6))),
            ServingStatus::kServing);
  EXPECT_EQ(*DecodeHealthCheckResponse(Buffer(std::string("\x08\x07", 2))),
            ServingStatus::kUnknown);  // An enum value this client does not know.
  EXPECT_EQ(DecodeHealthCheckResponse(Buffer(std::string("\x2b\x08\x02", 3))).status().code(),
            absl::StatusCode::kInternal);  // A group without its end.
  EXPECT_EQ(DecodeHealthCheckResponse(Buffer(std::string("\x2b\x34", 2))).status().code(),
            absl::StatusCode::kInternal);  // A group ended by another field's end.
  EXPECT_EQ(DecodeHealthCheckResponse(Buffer(std::string("\x2c", 1))).status().code(),
            absl::StatusCode::kInternal);  // An end without a start.
}

myops::v1::ScaleShiftStreamResponse StreamResponse(uint64_t id) {
  myops::v1::ScaleShiftStreamResponse response;
  response.set_request_id(id);
  return response;
}

TEST(ClientCodecTest, StreamResultsAndErrors) {
  myops::v1::ScaleShiftStreamResponse ok = StreamResponse(3);
  myops::v1::Tensor* output = ok.mutable_response()->mutable_output();
  output->set_dtype(myops::v1::DTYPE_FLOAT16);
  output->add_shape(2);
  output->set_data("abcd");
  ok.mutable_response()->mutable_timing()->set_device("cpu");
  StreamResult result = TakeStreamResult(&ok);
  EXPECT_EQ(result.request_id, 3u);
  ASSERT_TRUE(result.result.ok()) << result.result.status();
  EXPECT_EQ(result.result->output.bytes(), "abcd");
  EXPECT_EQ(result.result->output.dtype(), DType::kFloat16);
  EXPECT_EQ(result.result->timing.device, "cpu");

  myops::v1::ScaleShiftStreamResponse error = StreamResponse(4);
  error.mutable_error()->set_code(3);
  error.mutable_error()->set_message("dtype int8 is not supported");
  result = TakeStreamResult(&error);
  EXPECT_EQ(result.request_id, 4u);
  EXPECT_EQ(result.result.status(), absl::InvalidArgumentError("dtype int8 is not supported"));

  error.mutable_error()->set_code(0);  // A server bug: an "error" with code OK.
  EXPECT_EQ(TakeStreamResult(&error).result.status().code(), absl::StatusCode::kInternal);

  myops::v1::ScaleShiftStreamResponse empty = StreamResponse(5);
  EXPECT_THAT(TakeStreamResult(&empty).result.status().message(),
              ::testing::HasSubstr("without result or error for request 5"));
}

TEST(ClientCodecTest, MalformedServerOutputIsInternal) {
  myops::v1::ScaleShiftResponse response;
  response.mutable_output()->set_dtype(myops::v1::DTYPE_FLOAT32);
  response.mutable_output()->add_shape(2);
  response.mutable_output()->set_data("12345");  // 5 bytes, 8 expected.
  absl::StatusOr<ScaleShiftResult> result = TakeResult(&response, nullptr);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(result.status().message(), ::testing::HasSubstr("server response output"));

  response.mutable_output()->set_data("12345678");
  const TensorView expected{DType::kFloat32, {1, 2}, nullptr, 0};
  result = TakeResult(&response, &expected);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(result.status().message(),
              ::testing::HasSubstr("server returned a float32 tensor of shape [2]; expected "
                                   "float32 of shape [1, 2]"));
}

// `bytes` split into slices of `piece` bytes, as the transport delivers a message.
grpc::ByteBuffer InPieces(const std::string& bytes, size_t piece) {
  std::vector<grpc::Slice> slices;
  for (size_t at = 0; at < bytes.size(); at += piece) {
    slices.emplace_back(bytes.data() + at, std::min(piece, bytes.size() - at));
  }
  return grpc::ByteBuffer(slices.data(), slices.size());
}

TEST(ClientCodecTest, RequestBytesAreTheGeneratedEncoding) {
  auto pool = SendBufferPool::Create(size_t{1} << 30);
  for (size_t n : {size_t{8}, size_t{1} << 20}) {  // A plain slice, then a pooled buffer.
    std::string data(n, '\0');
    for (size_t i = 0; i < n; ++i) data[i] = static_cast<char>(i % 251);
    const TensorView input{DType::kFloat32, {2, static_cast<int64_t>(n / 8)}, data.data(), n};
    grpc::ByteBuffer bytes = EncodeRequestBytes(input, 2.0, -0.5, "cuda:1", *pool);
    myops::v1::ScaleShiftRequest request;
    ASSERT_TRUE(request.ParseFromString(Bytes(bytes)));
    EXPECT_EQ(request.input().dtype(), myops::v1::DTYPE_FLOAT32);
    EXPECT_THAT(request.input().shape(), ::testing::ElementsAre(2, static_cast<int64_t>(n / 8)));
    EXPECT_EQ(request.input().data(), data);
    EXPECT_EQ(request.alpha(), 2.0);
    EXPECT_EQ(request.beta(), -0.5);
    EXPECT_EQ(request.device(), "cuda:1");
  }
}

TEST(ClientCodecTest, EncodedRequestSizeIsWhatTheEncodersWrite) {
  auto pool = SendBufferPool::Create(size_t{1} << 30);
  const std::string data(size_t{1} << 20, '\x5a');
  const std::vector<std::vector<int64_t>> shapes = {{}, {0}, {3}, {2, 1000}, {1 << 18}};
  for (const std::vector<int64_t>& shape : shapes) {
    int64_t numel = 1;
    for (int64_t d : shape) numel *= d;
    const TensorView input{DType::kFloat32, shape, data.data(), static_cast<size_t>(numel) * 4};
    for (const std::string& device : {std::string(), std::string("cuda:1")}) {
      for (const double scalar : {0.0, -0.5}) {
        SCOPED_TRACE(ShapeToString(shape) + " device \"" + device + "\" scalars " +
                     std::to_string(scalar));
        EXPECT_EQ(EncodedRequestSize(input, scalar, scalar, device, 0),
                  EncodeRequestBytes(input, scalar, scalar, device, *pool).Length());
        // The stream's encoder (protobuf) omits empty data: at most the size, else equal.
        myops::v1::ScaleShiftRequest request;
        EncodeRequest(input, scalar, scalar, device, 12345, &request);
        const uint64_t size = EncodedRequestSize(input, scalar, scalar, device, 12345);
        if (numel == 0) {
          EXPECT_LE(request.ByteSizeLong(), size);
        } else {
          EXPECT_EQ(request.ByteSizeLong(), size);
        }
        EXPECT_LE(size, EncodedRequestSize(input, scalar, scalar, device,
                                           std::numeric_limits<uint64_t>::max()));
      }
    }
  }
}

// The echo server's response carries the request's tensor plus a timing, a few bytes more
// than a request with alpha = beta = 0 (not encoded): a request at the limit must still
// get its response, so the receive limit has slack over max_message_bytes.
TEST(ClientLimitsTest, ResponseSlightlyOverMaxMessageBytesIsReceived) {
  myops::testing::EchoTestServer server;
  ASSERT_TRUE(server.ok());
  ClientOptions options;
  options.target = server.target();
  options.max_message_bytes = 1 << 16;
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Create(options);
  ASSERT_TRUE(client.ok()) << client.status();
  std::vector<float> data((1 << 16) / 4);
  auto view = [&](int64_t n) {
    return TensorView{DType::kFloat32, {n}, data.data(), static_cast<size_t>(n) * 4};
  };
  int64_t n = static_cast<int64_t>(data.size());
  while (EncodedRequestSize(view(n), 0.0, 0.0, "", 0) > (1u << 16)) --n;  // The largest fit.
  absl::StatusOr<ScaleShiftResult> result = (*client)->ScaleShift(view(n), 0.0, 0.0);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->output.size_bytes(), static_cast<size_t>(n) * 4);
  EXPECT_EQ((*client)->ScaleShift(view(n + 1), 0.0, 0.0).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ClientCodecTest, ResponseBytesDecodeFromAnySlicing) {
  myops::v1::ScaleShiftResponse response;
  response.mutable_output()->set_dtype(myops::v1::DTYPE_BFLOAT16);
  response.mutable_output()->add_shape(3);
  response.mutable_output()->set_data("abcdef");
  response.mutable_timing()->set_compute_ns(123);
  response.mutable_timing()->set_device("cpu");
  const std::string bytes = response.SerializeAsString();
  const TensorView expected{DType::kBFloat16, {3}, nullptr, 0};
  for (size_t piece : {size_t{1}, size_t{4}, bytes.size()}) {
    absl::StatusOr<ScaleShiftResult> result =
        DecodeResponseBytes(InPieces(bytes, piece), &expected);
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->output.bytes(), "abcdef");
    EXPECT_EQ(result->timing.compute_ns, 123);
    EXPECT_EQ(result->timing.device, "cpu");

    std::string out(6, '\0');
    absl::StatusOr<Timing> timing = DecodeResponseBytesInto(
        InPieces(bytes, piece), MutableTensorView{DType::kBFloat16, {3}, out.data(), 6});
    ASSERT_TRUE(timing.ok()) << timing.status();
    EXPECT_EQ(out, "abcdef");
    EXPECT_EQ(timing->compute_ns, 123);
  }
}

TEST(ClientCodecTest, BadResponseBytesAreInternal) {
  const absl::StatusOr<ScaleShiftResult> garbage =
      DecodeResponseBytes(InPieces(std::string("\x0a\x7f", 2), 1), nullptr);
  EXPECT_EQ(garbage.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(garbage.status().message(),
              ::testing::HasSubstr("the 2 bytes are not a valid myops.v1.ScaleShiftResponse"));

  myops::v1::ScaleShiftResponse response;
  response.mutable_output()->set_dtype(myops::v1::DTYPE_FLOAT32);
  response.mutable_output()->add_shape(2);
  response.mutable_output()->set_data("12345");  // 5 bytes, 8 expected.
  const std::string short_data = response.SerializeAsString();
  EXPECT_THAT(DecodeResponseBytes(InPieces(short_data, 3), nullptr).status().message(),
              ::testing::HasSubstr("server response output"));

  response.mutable_output()->set_data("12345678");
  std::string out(8, '\0');
  const absl::StatusOr<Timing> mismatch =
      DecodeResponseBytesInto(InPieces(response.SerializeAsString(), 3),
                              MutableTensorView{DType::kFloat32, {1, 2}, out.data(), 8});
  EXPECT_EQ(mismatch.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(mismatch.status().message(),
              ::testing::HasSubstr("server returned a float32 tensor of shape [2]; expected "
                                   "float32 of shape [1, 2] (the output buffer's)"));
  EXPECT_EQ(out, std::string(8, '\0'));  // Nothing written on error.
}

TEST(SendBufferPoolTest, ReusesReleasedBuffersOfSimilarSize) {
  const size_t mib = size_t{1} << 20;
  auto pool = SendBufferPool::Create(8 * mib);
  const uint8_t* first = nullptr;
  {
    grpc::Slice slice = pool->Acquire(2 * mib);
    ASSERT_EQ(slice.size(), 2 * mib);
    first = slice.begin();
    EXPECT_EQ(pool->retained_bytes(), 0u);
  }  // gRPC would drop its last reference here.
  EXPECT_EQ(pool->retained_bytes(), 2 * mib);
  {
    grpc::Slice again = pool->Acquire(2 * mib - 100);  // Fits: the same memory again.
    EXPECT_EQ(again.begin(), first);
    EXPECT_EQ(again.size(), 2 * mib - 100);
    EXPECT_EQ(pool->retained_bytes(), 0u);
  }
  {
    grpc::Slice small = pool->Acquire(mib - 1);  // Under half the free buffer: not it.
    EXPECT_NE(small.begin(), first);
    EXPECT_EQ(pool->retained_bytes(), 2 * mib);
  }
  EXPECT_EQ(pool->retained_bytes(), 3 * mib - 1);
  grpc::Slice tiny = pool->Acquire(100);  // Below kMinPooledBytes: a plain slice.
  EXPECT_EQ(pool->retained_bytes(), 3 * mib - 1);
}

TEST(SendBufferPoolTest, KeepsAtMostItsLimitAndOutlivesItsOwner) {
  const size_t mib = size_t{1} << 20;
  auto pool = SendBufferPool::Create(4 * mib);
  std::vector<grpc::Slice> slices;
  for (int i = 0; i < 3; ++i) slices.push_back(pool->Acquire(2 * mib));
  std::weak_ptr<SendBufferPool> weak = pool;
  pool.reset();  // The client is gone; gRPC still holds the slices.
  ASSERT_FALSE(weak.expired());
  const size_t retained_after_two = [&] {
    slices.pop_back();
    slices.pop_back();
    return weak.lock()->retained_bytes();
  }();
  EXPECT_EQ(retained_after_two, 4 * mib);
  slices.pop_back();  // Over the limit: freed, not kept; the last slice frees the pool.
  EXPECT_TRUE(weak.expired());

  auto unpooled = SendBufferPool::Create(0);
  { grpc::Slice slice = unpooled->Acquire(mib); }
  EXPECT_EQ(unpooled->retained_bytes(), 0u);
}

TEST(ShmPoolTest, OnlyThisHostsTargetsAreLocal) {
  for (const char* target :
       {"localhost:50051", "127.0.0.1:50051", "[::1]:50051", "unix:///tmp/myops.sock",
        "ipv4:127.0.0.1:1,127.0.0.2:2", "dns:///localhost:50051", "ipv6:[::1]:50051"}) {
    EXPECT_TRUE(IsLocalTarget(target)) << target;
  }
  for (const char* target :
       {"myops.internal:50051", "10.0.0.1:50051", "ipv4:127.0.0.1:1,10.0.0.2:2",
        "dns:///myops-headless.ns.svc:50051", "[2001:db8::1]:50051"}) {
    EXPECT_FALSE(IsLocalTarget(target)) << target;
  }
}

}  // namespace
}  // namespace myops::client::internal
