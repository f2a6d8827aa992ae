// Validation done by the client before anything is sent: tensor views, output buffers,
// options. The client points at an unused port with retries off, so an input that slipped
// through validation would fail with UNAVAILABLE instead of INVALID_ARGUMENT.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>
#include <type_traits>
#include <vector>

#include "echo_test_server.h"
#include "myops/client/client.h"

namespace myops::client {
namespace {

using ::testing::HasSubstr;

struct Case {
  const char* name;
  TensorView input;
  const char* message;  // A fragment of the expected message.
};

const float kBuffer[64] = {};

std::vector<Case> Cases() {
  constexpr int64_t kBig = int64_t{1} << 40;
  return {
      {"unknown dtype",
       {static_cast<DType>(11), {2}, kBuffer, 8},
       "input: dtype 11 is not a known DType; expected one of float32, float64, float16, "
       "bfloat16, int8, int16, int32, int64, uint8, bool"},
      {"zero dtype", {static_cast<DType>(0), {2}, kBuffer, 8}, "dtype 0 is not a known DType"},
      {"negative dim",
       {DType::kFloat32, {2, -3}, kBuffer, 24},
       "input: shape [2, -3] has a negative dim (-3 at index 1); expected dims >= 0"},
      {"too few bytes",
       {DType::kFloat32, {2, 3}, kBuffer, 20},
       "input: size_bytes is 20 but shape [2, 3] of float32 needs exactly 24 bytes"},
      {"too many bytes",
       {DType::kFloat64, {2}, kBuffer, 24},
       "size_bytes is 24 but shape [2] of float64 needs exactly 16 bytes"},
      {"bytes for an empty tensor",
       {DType::kFloat16, {4, 0}, kBuffer, 2},
       "size_bytes is 2 but shape [4, 0] of float16 needs exactly 0 bytes"},
      {"null data",
       {DType::kFloat32, {2}, nullptr, 8},
       "input: data is null but size_bytes is 8; expected a buffer"},
      {"element count overflow",
       {DType::kFloat32, {kBig, kBig}, kBuffer, 8},
       "has more elements than int64 can count"},
      {"byte size overflow",
       {DType::kFloat64, {std::numeric_limits<int64_t>::max() / 4}, kBuffer, 8},
       "whose byte size overflows int64"},
  };
}

class ClientValidationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ClientOptions options;
    options.target = testing::UnusedTarget();
    options.retry.max_attempts = 1;
    options.max_message_bytes = 1024;
    absl::StatusOr<std::unique_ptr<Client>> client = Client::Create(options);
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = *std::move(client);
  }

  std::unique_ptr<Client> client_;
};

TEST_F(ClientValidationTest, ScaleShiftRejectsMalformedInputs) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<ScaleShiftResult> result = client_->ScaleShift(c.input, 2.0, 1.0);
    EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument) << result.status();
    EXPECT_THAT(result.status().message(), HasSubstr(c.message));
  }
}

TEST_F(ClientValidationTest, EveryCallValidatesTheSameWay) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    float out[64];
    MutableTensorView out_view{c.input.dtype, c.input.shape, out, c.input.size_bytes};
    absl::StatusOr<Timing> into = client_->ScaleShiftInto(c.input, 2.0, 1.0, out_view);
    EXPECT_EQ(into.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(into.status().message(), HasSubstr(c.message));

    absl::Status async_status;
    client_->ScaleShiftAsync(c.input, 2.0, 1.0, [&](absl::StatusOr<ScaleShiftResult> result) {
      async_status = result.status();
    });
    EXPECT_EQ(async_status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(async_status.message(), HasSubstr(c.message));
  }
}

TEST_F(ClientValidationTest, InputAboveMaxMessageBytesIsRejected) {
  std::vector<float> data(512);  // 2048 bytes > 1024.
  absl::StatusOr<ScaleShiftResult> result =
      client_->ScaleShift({DType::kFloat32, {512}, data.data(), 2048}, 2.0, 1.0);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(result.status().message(),
              HasSubstr("input: 2048 bytes exceed the client's max_message_bytes (1024)"));
}

// The limit applies to the encoded request: 1024 bytes of data need a few more bytes of
// framing, dtype, shape and scalars, so gRPC would refuse to send them.
TEST_F(ClientValidationTest, EncodedRequestAboveMaxMessageBytesIsRejected) {
  std::vector<float> data(256);  // Exactly 1024 bytes of data.
  const TensorView x{DType::kFloat32, {256}, data.data(), 1024};
  absl::StatusOr<ScaleShiftResult> result = client_->ScaleShift(x, 2.0, 1.0);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(result.status().message(),
              HasSubstr("bytes of encoded request (1024 bytes of tensor data plus its dtype, "
                        "shape and the call's other fields) exceed the client's "
                        "max_message_bytes (1024)"));
  absl::StatusOr<std::unique_ptr<StreamSession>> stream = client_->OpenStream();
  ASSERT_TRUE(stream.ok());
  EXPECT_EQ((*stream)->Send(x, 2.0, 1.0).status().code(), absl::StatusCode::kInvalidArgument);
  // Well under the limit: sent (and refused by the network).
  EXPECT_EQ(
      client_->ScaleShift({DType::kFloat32, {240}, data.data(), 960}, 2.0, 1.0).status().code(),
      absl::StatusCode::kUnavailable);
}

TEST_F(ClientValidationTest, ValidInputReachesTheNetwork) {
  float data[2] = {1, 2};
  EXPECT_EQ(client_->ScaleShift({DType::kFloat32, {2}, data, 8}, 2.0, 1.0).status().code(),
            absl::StatusCode::kUnavailable);
}

TEST(ClientOptionsTest, CreateRejectsBadOptions) {
  struct OptionsCase {
    void (*mutate)(ClientOptions&);
    const char* message;
  };
  const OptionsCase cases[] = {
      {[](ClientOptions& o) { o.target.clear(); }, "ClientOptions.target is empty"},
      {[](ClientOptions& o) { o.default_deadline = std::chrono::milliseconds(0); },
       "ClientOptions.default_deadline is 0 ms; expected in [1, 1000000000000] ms"},
      {[](ClientOptions& o) { o.default_deadline = std::chrono::milliseconds::max(); },
       "ClientOptions.default_deadline is 9223372036854775807 ms; expected in [1, "
       "1000000000000] ms"},
      {[](ClientOptions& o) { o.max_message_bytes = -1; },
       "ClientOptions.max_message_bytes is -1; expected > 0"},
      {[](ClientOptions& o) { o.max_pooled_send_bytes = -1; },
       "ClientOptions.max_pooled_send_bytes is -1; expected >= 0"},
      {[](ClientOptions& o) { o.retry.max_attempts = 0; },
       "ClientOptions.retry.max_attempts is 0; expected in [1, 1000]"},
      {[](ClientOptions& o) { o.retry.max_attempts = std::numeric_limits<int>::max(); },
       "ClientOptions.retry.max_attempts is 2147483647; expected in [1, 1000]"},
      {[](ClientOptions& o) { o.retry.max_backoff = std::chrono::milliseconds::max(); },
       "expected 0 <= initial <= max <= 1000000000000 ms"},
      {[](ClientOptions& o) { o.retry.multiplier = std::numeric_limits<double>::infinity(); },
       "ClientOptions.retry.multiplier is inf; expected finite and >= 1"},
      {[](ClientOptions& o) { o.auth_token = "two words"; },
       "ClientOptions.auth_token has a character that is not visible ASCII (32)"},
      {[](ClientOptions& o) { o.auth_token = "token\n"; },
       "ClientOptions.auth_token has a character that is not visible ASCII (10)"},
      {[](ClientOptions& o) { o.retry.max_backoff = std::chrono::milliseconds(1); },
       "expected 0 <= initial <= max"},
      {[](ClientOptions& o) { o.retry.multiplier = 0.5; },
       "ClientOptions.retry.multiplier is 0.5; expected finite and >= 1"},
      {[](ClientOptions& o) { o.tls.client_cert_pem = "cert"; },
       "only one of client_cert_pem and client_key_pem"},
      {[](ClientOptions& o) {
         o.tls.client_cert_pem = "cert";
         o.tls.client_key_pem = "key";
       },
       "a client certificate but no root_ca_pem"},
  };
  for (const OptionsCase& c : cases) {
    ClientOptions options;
    c.mutate(options);
    absl::StatusOr<std::unique_ptr<Client>> client = Client::Create(options);
    EXPECT_EQ(client.status().code(), absl::StatusCode::kInvalidArgument) << c.message;
    EXPECT_THAT(client.status().message(), HasSubstr(c.message));
  }
}

TEST(ClientOptionsTest, DefaultsAreAsDocumented) {
  ClientOptions options;
  EXPECT_EQ(options.target, "localhost:50051");
  EXPECT_EQ(options.default_deadline, std::chrono::seconds(30));
  EXPECT_EQ(options.max_message_bytes, 1 << 30);
  EXPECT_EQ(options.retry.max_attempts, 3);
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Create(options);
  ASSERT_TRUE(client.ok()) << client.status();
  EXPECT_EQ((*client)->options().target, "localhost:50051");
}

TEST(ClientTensorTest, DTypeHelpers) {
  EXPECT_EQ(DTypeItemSize(DType::kFloat32), 4u);
  EXPECT_EQ(DTypeItemSize(DType::kFloat64), 8u);
  EXPECT_EQ(DTypeItemSize(DType::kFloat16), 2u);
  EXPECT_EQ(DTypeItemSize(DType::kBFloat16), 2u);
  EXPECT_EQ(DTypeItemSize(DType::kInt8), 1u);
  EXPECT_EQ(DTypeItemSize(DType::kInt16), 2u);
  EXPECT_EQ(DTypeItemSize(DType::kInt32), 4u);
  EXPECT_EQ(DTypeItemSize(DType::kInt64), 8u);
  EXPECT_EQ(DTypeItemSize(DType::kUInt8), 1u);
  EXPECT_EQ(DTypeItemSize(DType::kBool), 1u);
  EXPECT_EQ(DTypeItemSize(static_cast<DType>(0)), 0u);
  EXPECT_EQ(DTypeItemSize(static_cast<DType>(11)), 0u);
  // The client's DType is the repository's one table, wire values included.
  static_assert(std::is_same_v<DType, ::myops::DType>);
  EXPECT_EQ(static_cast<int>(DType::kInt8), 5);
  EXPECT_EQ(static_cast<int>(DType::kBool), 10);
  for (const ::myops::DTypeInfo& info : ::myops::kDTypeTable) {
    absl::StatusOr<DType> parsed = ParseDType(DTypeName(info.dtype));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, info.dtype);
    EXPECT_EQ(DTypeItemSize(info.dtype), static_cast<size_t>(info.item_size));
  }
  EXPECT_EQ(DTypeName(DType::kUInt8), "uint8");
  EXPECT_EQ(DTypeName(static_cast<DType>(42)), "unknown");
  absl::StatusOr<DType> bad = ParseDType("int128");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("unknown dtype \"int128\"; expected one of "
                                                "float32, float64, float16, bfloat16, int8"));
}

TEST(ClientTensorTest, SizesAndAllocation) {
  EXPECT_EQ(*NumElements({}), 1);
  EXPECT_EQ(*NumElements({2, 3, 4}), 24);
  EXPECT_EQ(*NumElements({int64_t{1} << 40, int64_t{1} << 40, 0}), 0);  // 0 wins.
  EXPECT_EQ(*TensorByteSize(DType::kFloat64, {2, 3}), 48u);
  EXPECT_EQ(ShapeToString({}), "[]");
  EXPECT_EQ(ShapeToString({2, 3}), "[2, 3]");
  EXPECT_EQ(*TensorByteSize(DType::kInt16, {2, 3}), 12u);
  EXPECT_EQ(*TensorByteSize(DType::kBool, {2, 3}), 6u);
  absl::StatusOr<Tensor> tensor = Tensor::Allocate(DType::kBFloat16, {3, 5});
  ASSERT_TRUE(tensor.ok());
  EXPECT_EQ(tensor->size_bytes(), 30u);
  EXPECT_TRUE(ValidateTensorView(tensor->view()).ok());
  EXPECT_EQ(Tensor::Allocate(DType::kFloat32, {-1}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace myops::client
