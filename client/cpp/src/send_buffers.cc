// Pooled send buffers (see send_buffers.h).
#include "send_buffers.h"

#include <utility>

#include <grpc/slice.h>

namespace myops::client::internal {

// One buffer lent to gRPC; deleted by Release.
struct SendBufferPool::Block {
  std::shared_ptr<SendBufferPool> pool;
  std::unique_ptr<uint8_t[]> memory;
  size_t capacity;
};

std::shared_ptr<SendBufferPool> SendBufferPool::Create(size_t max_retained_bytes) {
  return std::shared_ptr<SendBufferPool>(new SendBufferPool(max_retained_bytes));
}

grpc::Slice SendBufferPool::Acquire(size_t size) {
  if (size < kMinPooledBytes) return grpc::Slice(grpc_slice_malloc(size), grpc::Slice::STEAL_REF);
  auto block = std::make_unique<Block>();
  block->pool = shared_from_this();
  {
    std::lock_guard<std::mutex> lock(mu_);
    // The smallest free buffer that fits, unless it is over twice the size: a small
    // request must not hold a large buffer that a large request could reuse.
    auto it = free_.lower_bound(size);
    if (it != free_.end() && it->first / 2 <= size) {
      block->capacity = it->first;
      block->memory = std::move(it->second);
      retained_ -= it->first;
      free_.erase(it);
    }
  }
  if (block->memory == nullptr) {
    block->memory.reset(new uint8_t[size]);  // Uninitialized: the caller overwrites it.
    block->capacity = size;
  }
  uint8_t* data = block->memory.get();
  return grpc::Slice(
      grpc_slice_new_with_user_data(data, size, &SendBufferPool::Release, block.release()),
      grpc::Slice::STEAL_REF);
}

size_t SendBufferPool::retained_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return retained_;
}

void SendBufferPool::Release(void* opaque) {
  std::unique_ptr<Block> block(static_cast<Block*>(opaque));
  SendBufferPool& pool = *block->pool;
  std::lock_guard<std::mutex> lock(pool.mu_);
  // Make room by dropping smaller kept buffers (the size just used is the likeliest to
  // come next); if it still does not fit, this buffer is freed instead.
  while (pool.retained_ + block->capacity > pool.max_retained_ && !pool.free_.empty() &&
         pool.free_.begin()->first < block->capacity) {
    pool.retained_ -= pool.free_.begin()->first;
    pool.free_.erase(pool.free_.begin());
  }
  if (pool.retained_ + block->capacity <= pool.max_retained_) {
    pool.retained_ += block->capacity;
    pool.free_.emplace(block->capacity, std::move(block->memory));
  }
}

}  // namespace myops::client::internal
