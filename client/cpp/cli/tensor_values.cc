// Element conversions, random inputs and value summaries for myops-cli (see
// tensor_values.h), for every dtype of the table in myops/common/dtype.h.
#include "tensor_values.h"

#include <cmath>
#include <cstring>
#include <random>

#include "absl/strings/str_cat.h"

namespace myops::cli {
namespace {

uint32_t FloatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

float BitsToFloat(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

template <typename T>
T Load(const void* data, int64_t index) {
  T value;
  std::memcpy(&value, static_cast<const char*>(data) + index * sizeof(T), sizeof(T));
  return value;
}

template <typename T>
void Store(void* data, int64_t index, T value) {
  std::memcpy(static_cast<char*>(data) + index * sizeof(T), &value, sizeof(T));
}

}  // namespace

uint16_t FloatToHalf(float value) {
  const uint32_t bits = FloatBits(value);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  const uint32_t abs = bits & 0x7fffffff;
  if (abs >= 0x7f800000) {  // Inf or NaN (keep a quiet NaN).
    return sign | (abs > 0x7f800000 ? 0x7e00 : 0x7c00);
  }
  if (abs >= 0x477ff000) return sign | 0x7c00;  // Rounds to >= 65520: overflow to inf.
  if (abs < 0x38800000) {  // Below the smallest normal half (2^-14): subnormal or zero.
    // Scale into the subnormal range with float arithmetic (exact rounding by the FPU).
    const float magnitude = BitsToFloat(abs) * 16777216.0f;  // * 2^24: units of 2^-24.
    return sign | static_cast<uint16_t>(std::nearbyint(magnitude));
  }
  // Normal: rebias the exponent (127 -> 15) and round the mantissa to 10 bits.
  const uint32_t rebased = abs - ((127 - 15) << 23);
  const uint32_t round = 0xfff + ((rebased >> 13) & 1);
  return sign | static_cast<uint16_t>((rebased + round) >> 13);
}

float HalfToFloat(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1f;
  const uint32_t mantissa = bits & 0x3ff;
  if (exponent == 0) {  // Zero or subnormal: mantissa * 2^-24.
    const float magnitude = static_cast<float>(mantissa) / 16777216.0f;
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 0x1f) return BitsToFloat(sign | 0x7f800000 | (mantissa << 13));
  return BitsToFloat(sign | ((exponent + 127 - 15) << 23) | (mantissa << 13));
}

uint16_t FloatToBFloat16(float value) {
  const uint32_t bits = FloatBits(value);
  if ((bits & 0x7fffffff) > 0x7f800000) return static_cast<uint16_t>((bits >> 16) | 0x40);
  const uint32_t round = 0x7fff + ((bits >> 16) & 1);
  return static_cast<uint16_t>((bits + round) >> 16);
}

float BFloat16ToFloat(uint16_t bits) { return BitsToFloat(static_cast<uint32_t>(bits) << 16); }

double ElementAsDouble(const client::TensorView& tensor, int64_t index) {
  switch (tensor.dtype) {
    case client::DType::kFloat32:
      return Load<float>(tensor.data, index);
    case client::DType::kFloat64:
      return Load<double>(tensor.data, index);
    case client::DType::kFloat16:
      return HalfToFloat(Load<uint16_t>(tensor.data, index));
    case client::DType::kBFloat16:
      return BFloat16ToFloat(Load<uint16_t>(tensor.data, index));
    case client::DType::kInt8:
    case client::DType::kInt16:
    case client::DType::kInt32:
    case client::DType::kInt64:
    case client::DType::kUInt8:
    case client::DType::kBool:
      return static_cast<double>(ElementAsInt64(tensor, index));
  }
  return std::nan("");
}

int64_t ElementAsInt64(const client::TensorView& tensor, int64_t index) {
  switch (tensor.dtype) {
    case client::DType::kInt8:
      return Load<int8_t>(tensor.data, index);
    case client::DType::kInt16:
      return Load<int16_t>(tensor.data, index);
    case client::DType::kInt32:
      return Load<int32_t>(tensor.data, index);
    case client::DType::kInt64:
      return Load<int64_t>(tensor.data, index);
    case client::DType::kUInt8:
      return Load<uint8_t>(tensor.data, index);
    case client::DType::kBool:
      return Load<uint8_t>(tensor.data, index) != 0;
    default: {
      const double value = ElementAsDouble(tensor, index);
      return std::isfinite(value) && std::fabs(value) < 9.2e18 ? static_cast<int64_t>(value) : 0;
    }
  }
}

void FillRandom(uint64_t seed, client::Tensor* tensor) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  // Integers: small values of either sign (unsigned: [0, 200]); bool: false or true.
  std::uniform_int_distribution<int> small(-100, 100);
  const int64_t count =
      static_cast<int64_t>(tensor->size_bytes() / client::DTypeItemSize(tensor->dtype()));
  void* data = tensor->mutable_data();
  for (int64_t i = 0; i < count; ++i) {
    const double value = uniform(rng);
    switch (tensor->dtype()) {
      case client::DType::kFloat32:
        Store(data, i, static_cast<float>(value));
        break;
      case client::DType::kFloat64:
        Store(data, i, value);
        break;
      case client::DType::kFloat16:
        Store(data, i, FloatToHalf(static_cast<float>(value)));
        break;
      case client::DType::kBFloat16:
        Store(data, i, FloatToBFloat16(static_cast<float>(value)));
        break;
      case client::DType::kInt8:
        Store(data, i, static_cast<int8_t>(small(rng)));
        break;
      case client::DType::kInt16:
        Store(data, i, static_cast<int16_t>(small(rng)));
        break;
      case client::DType::kInt32:
        Store(data, i, static_cast<int32_t>(small(rng)));
        break;
      case client::DType::kInt64:
        Store(data, i, static_cast<int64_t>(small(rng)));
        break;
      case client::DType::kUInt8:
        Store(data, i, static_cast<uint8_t>(small(rng) + 100));
        break;
      case client::DType::kBool:
        Store(data, i, static_cast<uint8_t>(value >= 0.0));
        break;
    }
  }
}

std::string FormatValues(const client::TensorView& tensor, int max_values) {
  const size_t item_size = client::DTypeItemSize(tensor.dtype);
  const int64_t count = item_size == 0 ? 0 : static_cast<int64_t>(tensor.size_bytes / item_size);
  std::string out = "[";
  for (int64_t i = 0; i < count && i < max_values; ++i) {
    absl::StrAppend(&out, i == 0 ? "" : ", ");
    if (tensor.dtype == client::DType::kBool) {
      out += ElementAsInt64(tensor, i) != 0 ? "true" : "false";
    } else if (IsFloatingDType(tensor.dtype)) {
      absl::StrAppend(&out, ElementAsDouble(tensor, i));
    } else {
      absl::StrAppend(&out, ElementAsInt64(tensor, i));  // Exact, even beyond 2^53.
    }
  }
  if (count > max_values) absl::StrAppend(&out, ", ... (", count, " values)");
  out += "]";
  return out;
}

}  // namespace myops::cli
