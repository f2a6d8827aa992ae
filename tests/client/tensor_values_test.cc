// myops-cli's element helpers: float16/bfloat16 conversions, random inputs, formatting.
#include "tensor_values.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <utility>

namespace myops::cli {
namespace {

TEST(ClientCliValuesTest, HalfConversions) {
  EXPECT_EQ(FloatToHalf(0.0f), 0x0000);
  EXPECT_EQ(FloatToHalf(-0.0f), 0x8000);
  EXPECT_EQ(FloatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(FloatToHalf(-2.0f), 0xc000);
  EXPECT_EQ(FloatToHalf(65504.0f), 0x7bff);                      // Largest half.
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7c00);                      // Rounds to inf.
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -24)), 0x0001);         // Smallest subnormal.
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -14)), 0x0400);         // Smallest normal.
  EXPECT_EQ(FloatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // Tie to even.
  EXPECT_EQ(FloatToHalf(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_TRUE(std::isnan(HalfToFloat(FloatToHalf(std::nanf("")))));
  for (uint32_t bits = 0; bits < 0x7c00; ++bits) {  // Every finite positive half survives.
    ASSERT_EQ(FloatToHalf(HalfToFloat(static_cast<uint16_t>(bits))), bits);
  }
}

TEST(ClientCliValuesTest, BFloat16Conversions) {
  EXPECT_EQ(FloatToBFloat16(1.0f), 0x3f80);
  EXPECT_EQ(FloatToBFloat16(-2.0f), 0xc000);
  EXPECT_EQ(BFloat16ToFloat(0x3f80), 1.0f);
  EXPECT_EQ(FloatToBFloat16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);  // Tie to even.
  EXPECT_EQ(FloatToBFloat16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_TRUE(std::isnan(BFloat16ToFloat(FloatToBFloat16(std::nanf("")))));
}

TEST(ClientCliValuesTest, RandomIsSeededAndInRange) {
  absl::StatusOr<client::Tensor> a = client::Tensor::Allocate(client::DType::kFloat16, {100});
  absl::StatusOr<client::Tensor> b = client::Tensor::Allocate(client::DType::kFloat16, {100});
  FillRandom(3, &*a);
  FillRandom(3, &*b);
  EXPECT_EQ(a->bytes(), b->bytes());
  for (int i = 0; i < 100; ++i) {
    const double v = ElementAsDouble(a->view(), i);
    EXPECT_GE(v, -1.0);
    EXPECT_LE(v, 1.0);
  }
}

TEST(ClientCliValuesTest, FormatValues) {
  const double data[3] = {1.5, -2, 0.25};
  EXPECT_EQ(FormatValues({client::DType::kFloat64, {3}, data, 24}, 8), "[1.5, -2, 0.25]");
  EXPECT_EQ(FormatValues({client::DType::kFloat64, {3}, data, 24}, 2), "[1.5, -2, ... (3 values)]");
  EXPECT_EQ(FormatValues({client::DType::kFloat64, {0}, nullptr, 0}, 2), "[]");
}

TEST(ClientCliValuesTest, IntegerAndBoolValues) {
  const int64_t big[2] = {(int64_t{1} << 53) + 1, -7};
  EXPECT_EQ(FormatValues({client::DType::kInt64, {2}, big, 16}, 8), "[9007199254740993, -7]");
  const uint8_t bytes[3] = {0, 1, 255};
  EXPECT_EQ(FormatValues({client::DType::kUInt8, {3}, bytes, 3}, 8), "[0, 1, 255]");
  EXPECT_EQ(FormatValues({client::DType::kInt8, {3}, bytes, 3}, 8), "[0, 1, -1]");
  EXPECT_EQ(FormatValues({client::DType::kBool, {2}, bytes, 2}, 8), "[false, true]");
  const int16_t shorts[2] = {-300, 300};
  EXPECT_EQ(ElementAsDouble({client::DType::kInt16, {2}, shorts, 4}, 0), -300.0);
  EXPECT_EQ(ElementAsInt64({client::DType::kInt16, {2}, shorts, 4}, 1), 300);
}

TEST(ClientCliValuesTest, RandomIntegersAndBoolsAreSeededAndInRange) {
  const std::pair<client::DType, std::pair<int64_t, int64_t>> cases[] = {
      {client::DType::kInt8, {-100, 100}},  {client::DType::kInt16, {-100, 100}},
      {client::DType::kInt32, {-100, 100}}, {client::DType::kInt64, {-100, 100}},
      {client::DType::kUInt8, {0, 200}},    {client::DType::kBool, {0, 1}}};
  for (const auto& [dtype, range] : cases) {
    SCOPED_TRACE(std::string(client::DTypeName(dtype)));
    absl::StatusOr<client::Tensor> a = client::Tensor::Allocate(dtype, {200});
    absl::StatusOr<client::Tensor> b = client::Tensor::Allocate(dtype, {200});
    FillRandom(5, &*a);
    FillRandom(5, &*b);
    EXPECT_EQ(a->bytes(), b->bytes());
    bool low = false, high = false;
    for (int i = 0; i < 200; ++i) {
      const int64_t v = ElementAsInt64(a->view(), i);
      EXPECT_GE(v, range.first);
      EXPECT_LE(v, range.second);
      low = low || v <= (range.first + range.second) / 2;
      high = high || v > (range.first + range.second) / 2;
    }
    EXPECT_TRUE(low && high) << "200 values all on one side";
  }
}

}  // namespace
}  // namespace myops::cli
