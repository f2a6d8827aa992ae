// A result tensor's memory as a gRPC slice, for the gRPC front ends' response encoders:
// no copy; the slice holds a reference to the tensor's owner until gRPC has sent it.
#pragma once

#include <grpcpp/support/slice.h>

#include "runtime/tensor_view.h"

namespace myops::server {

// The slice of `view`'s bytes, keeping its owner (TensorView::owner) alive until gRPC
// frees the slice (an empty slice for an empty tensor). A view without an owner must
// outlive the slice.
grpc::Slice TensorSlice(const TensorView& view);

}  // namespace myops::server
