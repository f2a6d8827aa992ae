// SendBufferPool: the memory that request tensors are copied into once, handed to gRPC as
// slices that it owns until the bytes are written. A released buffer returns to the pool
// for the next request of a similar size, so large requests do not page-fault fresh
// memory each time (glibc unmaps large blocks on free).
#ifndef MYOPS_CLIENT_SRC_SEND_BUFFERS_H_
#define MYOPS_CLIENT_SRC_SEND_BUFFERS_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include <grpcpp/support/slice.h>

#include "absl/base/thread_annotations.h"

namespace myops::client::internal {

// Thread-safe. Slices hold a reference to the pool, so buffers gRPC releases after the
// client is gone still find it.
class SendBufferPool : public std::enable_shared_from_this<SendBufferPool> {
 public:
  // Keeps at most `max_retained_bytes` of released buffers.
  static std::shared_ptr<SendBufferPool> Create(size_t max_retained_bytes);

  // A slice of `size` uninitialized bytes, the caller's to fill before sending it.
  grpc::Slice Acquire(size_t size);

  // Bytes of released buffers kept for reuse.
  size_t retained_bytes() const;

  // Smaller requests use plain gRPC slices: allocators serve them without page faults.
  static constexpr size_t kMinPooledBytes = size_t{64} << 10;

 private:
  explicit SendBufferPool(size_t max_retained_bytes) : max_retained_(max_retained_bytes) {}
  struct Block;
  static void Release(void* block);  // gRPC's destroy callback; any thread.

  const size_t max_retained_;
  mutable std::mutex mu_;
  std::multimap<size_t, std::unique_ptr<uint8_t[]>> free_ ABSL_GUARDED_BY(mu_);  // By capacity.
  size_t retained_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace myops::client::internal

#endif  // MYOPS_CLIENT_SRC_SEND_BUFFERS_H_
