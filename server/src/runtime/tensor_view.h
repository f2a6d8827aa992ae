// Plain tensor descriptions shared by the protobuf-facing codec and the torch-facing
// executor. Nothing here includes protobuf or torch: this is where the two meet.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "myops/common/dtype.h"

namespace myops::server {

// Element types on the wire and in the executor: the repository's one table
// (myops/common/dtype.h; values match myops.v1.DType). ItemSize and DTypeName come with it.
using ::myops::DType;
using ::myops::DTypeName;
using ::myops::ItemSize;

// A read-only view of a dense row-major tensor owned by someone else (on the server: the
// request message). `bytes` == numel * ItemSize(dtype), checked by the codec.
struct TensorView {
  DType dtype = DType::kFloat32;
  std::vector<int64_t> shape;
  const void* data = nullptr;
  int64_t bytes = 0;
};

// Limits on a single tensor a client sends, checked before anything is allocated for
// it. Both must be > 0.
struct TensorLimits {
  int64_t max_elements = int64_t{1} << 28;
  int64_t max_bytes = int64_t{256} << 20;
  int max_dims = 64;
};

// A writable view of the same kind (on the server: the response message's buffer).
struct MutableTensorView {
  DType dtype = DType::kFloat32;
  std::vector<int64_t> shape;
  void* data = nullptr;
  int64_t bytes = 0;
};

}  // namespace myops::server
