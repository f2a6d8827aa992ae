// Element-level helpers of myops-cli: float16/bfloat16 conversions, reading an element as
// a double or an integer, seeded random inputs and a short printable summary of a
// tensor's values, for every dtype.
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

// Element `index` (row-major) of a valid view, widened to double (bool: 0 or 1).
double ElementAsDouble(const client::TensorView& tensor, int64_t index);

// Element `index` of a valid view of an integer or bool tensor, exactly (bool: 0 or 1, any
// non-zero byte being true); floating point elements are truncated toward zero.
int64_t ElementAsInt64(const client::TensorView& tensor, int64_t index);

// Fills a tensor with seeded random values: floating point uniform in [-1, 1), rounded to
// its dtype; signed integers in [-100, 100], uint8 in [0, 200], bool false or true. The
// same seed gives the same values.
void FillRandom(uint64_t seed, client::Tensor* tensor);

// "[v0, v1, ...]" with at most `max_values` values (then ", ... (N values)"); integers
// exactly, bools as true/false.
std::string FormatValues(const client::TensorView& tensor, int max_values);

}  // namespace myops::cli

#endif  // MYOPS_CLIENT_CLI_TENSOR_VALUES_H_
