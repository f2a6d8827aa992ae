// The protobuf side of the server's data path: validates wire tensors and exposes them
// as views (no copy), and prepares response tensors whose buffers the executor fills.
// Validation happens before anything sized by the request is allocated.
#pragma once

#include <cstdint>
#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"
#include "myops/v1/myops.pb.h"
#include "tensor_view.h"

namespace myops::server {

// Limits on a single tensor. Both must be > 0.
struct TensorLimits {
  int64_t max_elements = int64_t{1} << 28;
  int64_t max_bytes = int64_t{256} << 20;
  int max_dims = 64;
};

// Checks `t` (dtype known, dims >= 0 and at most max_dims, element count and byte size
// computed without overflow and within `limits`, data exactly numel * itemsize bytes)
// and returns a view of its bytes. The view borrows from `t`. Errors are
// INVALID_ARGUMENT naming `field` (e.g. "input") and saying what was expected.
absl::StatusOr<TensorView> DecodeTensor(const myops::v1::Tensor& t, absl::string_view field,
                                        const TensorLimits& limits);

// Sets `out`'s dtype and shape to `like`'s and sizes its data to hold them; returns a
// writable view of that buffer. `like` must come from DecodeTensor.
MutableTensorView PrepareOutput(const TensorView& like, myops::v1::Tensor* out);

}  // namespace myops::server
