// Torch-free access to the CPU operator and to random tensor data, for tests whose
// translation units include generated protobuf headers (which must not see torch).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/tensor_view.h"

namespace myops::server::testing {

// alpha * x + beta computed by myops::scale_shift on the CPU, as raw bytes.
std::string ReferenceScaleShift(DType dtype, const std::vector<int64_t>& shape,
                                const std::string& bytes, double alpha, double beta);

// Whether two tensors given as raw bytes are elementwise close (|a-b| <= atol + rtol*|b|).
bool AllClose(DType dtype, const std::string& a, const std::string& b, double rtol, double atol);

// numel normally distributed values of `dtype`, as raw bytes; deterministic in `seed`.
std::string RandomTensorBytes(DType dtype, int64_t numel, uint64_t seed);

}  // namespace myops::server::testing
