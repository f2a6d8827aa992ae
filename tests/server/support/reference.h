// Torch-free access to the CPU operator and to random tensor data, for tests whose
// translation units include generated protobuf headers (which must not see torch).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tensor_view.h"

namespace myops::server::testing {

// alpha * x + beta computed by myops::scale_shift on the CPU, as raw bytes.
std::string ReferenceScaleShift(DType dtype, const std::vector<int64_t>& shape,
                                const std::string& bytes, double alpha, double beta);

// numel normally distributed values of `dtype`, as raw bytes; deterministic in `seed`.
std::string RandomTensorBytes(DType dtype, int64_t numel, uint64_t seed);

}  // namespace myops::server::testing
