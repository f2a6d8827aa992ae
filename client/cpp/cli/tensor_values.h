// Element-level helpers of myops-cli: float16/bfloat16 conversions, reading an element as
// a double, seeded random inputs and a short printable summary of a tensor's values.
#ifndef MYOPS_CLIENT_CLI_TENSOR_VALUES_H_
#define MYOPS_CLIENT_CLI_TENSOR_VALUES_H_

#include <cstdint>
#include <string>

#include "myops/client/tensor.h"

namespace myops::cli {

// IEEE binary16 <-> float, round to nearest even (overflow to inf, NaN kept).
uint16_t FloatToHalf(float value);
float HalfToFloat(uint16_t bits);

// bfloat16 <-> float: the upper 16 bits of the float, round to nearest even.
uint16_t FloatToBFloat16(float value);
float BFloat16ToFloat(uint16_t bits);

// Element `index` (row-major) of a valid view, widened to double.
double ElementAsDouble(const client::TensorView& tensor, int64_t index);

// Fills a tensor with values uniform in [-1, 1), rounded to its dtype; the same seed
// gives the same values.
void FillRandom(uint64_t seed, client::Tensor* tensor);

// "[v0, v1, ...]" with at most `max_values` values (then ", ... (N values)").
std::string FormatValues(const client::TensorView& tensor, int max_values);

}  // namespace myops::cli

#endif  // MYOPS_CLIENT_CLI_TENSOR_VALUES_H_
