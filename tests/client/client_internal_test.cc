// Unit tests of the client's internals (client/cpp/src): status conversion, retry backoff
// and the hand-encoded grpc.health.v1 messages.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "codec.h"
#include "grpc_status.h"
#include "health.h"
#include "retry.h"

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
  std::vector<grpc::Slice> slices;
  EXPECT_TRUE(buffer.Dump(&slices).ok());
  std::string out;
  for (const grpc::Slice& s : slices)
    out.append(reinterpret_cast<const char*>(s.begin()), s.size());
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

}  // namespace
}  // namespace myops::client::internal
