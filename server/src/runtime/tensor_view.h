// Plain tensor descriptions shared by the protobuf-facing codec and the torch-facing
// executor. Nothing here includes protobuf or torch: this is where the two meet.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "myops/common/dtype.h"

namespace myops::server {

// Element types on the wire and in the executor: the repository's one table
// (myops/common/dtype.h; values match myops.v1.DType). ItemSize and DTypeName come with it.
using ::myops::DType;
using ::myops::DTypeName;
using ::myops::ItemSize;

// A read-only view of a dense row-major tensor. `bytes` == numel * ItemSize(dtype),
// checked by the codec. `owner` keeps the memory alive where the view holds it (an
// operator's result tensors: whoever sends them keeps a reference until they are sent);
// null where the memory is someone else's (an argument borrows from the request, a result
// computed into a front end's buffer from that buffer).
struct TensorView {
  DType dtype = DType::kFloat32;
  std::vector<int64_t> shape;
  const void* data = nullptr;
  int64_t bytes = 0;
  std::shared_ptr<const void> owner;
};

// Limits on a single tensor a client sends, checked before anything is allocated for
// it. Both must be > 0.
struct TensorLimits {
  int64_t max_elements = int64_t{1} << 28;
  int64_t max_bytes = int64_t{256} << 20;
  int max_dims = 64;

  // The limits of a tensor in a shared memory region: the same elements and dimensions
  // (what an operator is asked to compute on), bytes bounded by the region instead of
  // the message size.
  TensorLimits InRegion() const {
    TensorLimits limits = *this;
    limits.max_bytes = std::numeric_limits<int64_t>::max();
    return limits;
  }
};

// A writable view of the same kind (on the server: the response message's buffer).
struct MutableTensorView {
  DType dtype = DType::kFloat32;
  std::vector<int64_t> shape;
  void* data = nullptr;
  int64_t bytes = 0;
};

}  // namespace myops::server
