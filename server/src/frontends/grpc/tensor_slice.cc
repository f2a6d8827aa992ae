// Result tensors as gRPC slices (tensor_slice.h).
#include "frontends/grpc/tensor_slice.h"

#include <grpc/slice.h>

namespace myops::server {

grpc::Slice TensorSlice(const TensorView& view) {
  if (view.bytes == 0) return grpc::Slice();
  auto* holder = new std::shared_ptr<const void>(view.owner);
  return grpc::Slice(
      grpc_slice_new_with_user_data(
          const_cast<void*>(view.data), static_cast<size_t>(view.bytes),
          [](void* p) { delete static_cast<std::shared_ptr<const void>*>(p); }, holder),
      grpc::Slice::STEAL_REF);
}

}  // namespace myops::server
