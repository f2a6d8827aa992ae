// A front end's parsed request message in a protobuf arena whose first block lives inside
// the request's state: a small request's messages, maps and repeated fields take no heap
// allocation of their own, and all of them go at once with the state (no destructor walk
// over the message tree). Strings past the small-string size (tensor data, long names)
// still own heap buffers, freed with the arena. Not thread-safe: owned by one request.
#pragma once

#include <google/protobuf/arena.h>

#include <cstddef>
#include <cstdint>
#include <utility>

namespace myops::server {

template <typename M>
class ArenaRequest {
 public:
  ArenaRequest() : arena_(Options(block_)), message_(Make(&arena_)) {}
  ArenaRequest(const ArenaRequest&) = delete;
  ArenaRequest& operator=(const ArenaRequest&) = delete;
  // Replaces the message by a copy of `other`'s; everything this one held is freed first
  // (a stream keeps a failed request's state only for its small error).
  ArenaRequest& operator=(ArenaRequest&& other) {
    if (this == &other) return *this;
    Reset();
    *message_ = std::move(*other.message_);  // another arena: copied
    return *this;
  }

  // An empty message again; everything the old one held is freed.
  void Reset() {
    arena_.Reset();
    message_ = Make(&arena_);
  }

  // Bytes the arena holds: the inline block, and any block allocated beyond it.
  uint64_t arena_bytes() const { return arena_.SpaceAllocated(); }
  static constexpr size_t inline_bytes() { return kInlineBytes; }

  M* get() { return message_; }
  const M* get() const { return message_; }
  M& operator*() { return *message_; }
  const M& operator*() const { return *message_; }
  M* operator->() { return message_; }
  const M* operator->() const { return message_; }

 private:
  // Holds the head of a scale_shift Call or ModelInfer with two parameters
  // (arena_request_test.cc checks that they allocate no further block).
  static constexpr size_t kInlineBytes = 2048;

  static google::protobuf::ArenaOptions Options(char* block) {
    google::protobuf::ArenaOptions options;
    options.initial_block = block;
    options.initial_block_size = kInlineBytes;
    return options;
  }
  static M* Make(google::protobuf::Arena* arena) {
    return google::protobuf::Arena::CreateMessage<M>(arena);
  }

  alignas(std::max_align_t) char block_[kInlineBytes];
  google::protobuf::Arena arena_;
  M* message_;
};

}  // namespace myops::server
