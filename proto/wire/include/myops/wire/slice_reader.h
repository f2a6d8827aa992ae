// A reader of protobuf's wire format over gRPC slices, with protobuf's own rules for
// tags, lengths and groups: the one such reader, used by myops_wire (tensor_wire.cc,
// call_wire.cc) and the C++ client's generic-call response decoder.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <grpcpp/support/slice.h>

#include "myops/wire/tensor_wire.h"

namespace myops::wire::detail {

constexpr int kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5;
constexpr int kTensorDataField = 3;  // myops.v1.Tensor.data

constexpr uint64_t Key(int field, int wire_type) {
  return (static_cast<uint64_t>(field) << 3) | static_cast<uint64_t>(wire_type);
}

inline size_t VarintSize(uint64_t value) {
  size_t n = 1;
  while (value >= 0x80) {
    value >>= 7;
    ++n;
  }
  return n;
}

using Span = std::pair<const uint8_t*, size_t>;

// A forward cursor over a sequence of slices, as one byte string.
class SliceReader {
 public:
  // Protobuf refuses lengths within its 16 bytes of slop of INT_MAX.
  static constexpr uint64_t kMaxLength = std::numeric_limits<int32_t>::max() - 16;

  explicit SliceReader(const std::vector<grpc::Slice>& slices) : slices_(slices) {
    for (const grpc::Slice& s : slices_) total_ += s.size();
    SkipEmpty();
  }

  uint64_t position() const { return position_; }
  uint64_t remaining() const { return total_ - position_; }

  bool ReadVarint(uint64_t* value) {
    *value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (position_ == total_) return false;
      const uint8_t byte = slices_[index_].begin()[offset_];
      Advance(1);
      *value |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return true;
    }
    return false;  // More than 10 bytes.
  }

  // A field's tag, as protobuf reads it: at most 5 bytes, bits beyond 32 dropped.
  bool ReadTag(uint32_t* tag) {
    *tag = 0;
    for (int shift = 0; shift < 35; shift += 7) {
      if (position_ == total_) return false;
      const uint8_t byte = slices_[index_].begin()[offset_];
      Advance(1);
      *tag |= static_cast<uint32_t>(byte & 0x7f) << shift;  // Truncates at shift 28.
      if ((byte & 0x80) == 0) return true;
    }
    return false;
  }

  // A length, as protobuf reads it: at most 5 bytes, the value below 2^31 - 16.
  bool ReadLength(uint64_t* length) {
    *length = 0;
    for (int shift = 0; shift < 35; shift += 7) {
      if (position_ == total_) return false;
      const uint8_t byte = slices_[index_].begin()[offset_];
      if (shift == 28 && byte >= 8) return false;  // 2^31 or more.
      Advance(1);
      *length |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return *length <= kMaxLength;
    }
    return false;
  }

  // Moves `n` bytes ahead, appending them to `sink` and/or recording them as spans of the
  // slices in `spans` (each when non-null). False when fewer than `n` bytes remain.
  bool Skip(uint64_t n, std::string* sink, std::vector<Span>* spans) {
    if (n > remaining()) return false;
    while (n > 0) {
      const grpc::Slice& slice = slices_[index_];
      const size_t take = static_cast<size_t>(std::min<uint64_t>(n, slice.size() - offset_));
      const uint8_t* begin = slice.begin() + offset_;
      if (sink != nullptr) sink->append(reinterpret_cast<const char*>(begin), take);
      if (spans != nullptr) spans->emplace_back(begin, take);
      Advance(take);
      n -= take;
    }
    return true;
  }

 private:
  void Advance(size_t n) {  // n <= bytes left in the current slice
    offset_ += n;
    position_ += n;
    SkipEmpty();
  }
  void SkipEmpty() {
    while (index_ < slices_.size() && offset_ == slices_[index_].size()) {
      ++index_;
      offset_ = 0;
    }
  }

  const std::vector<grpc::Slice>& slices_;
  size_t index_ = 0;
  size_t offset_ = 0;
  uint64_t position_ = 0;
  uint64_t total_ = 0;
};

inline bool ReadKey(SliceReader& in, uint64_t* key) {
  uint32_t tag = 0;
  if (!in.ReadTag(&tag) || (tag >> 3) == 0) return false;
  *key = tag;
  return true;
}

// Moves past the value of a field with `key`, appending its encoding to `sink`, which may
// grow to at most `limit` bytes. Groups (an unknown field may be one) nest at most
// kMaxGroupDepth deep, as in protobuf.
constexpr int kMaxGroupDepth = 100;
constexpr int kStartGroup = 3, kEndGroup = 4;

enum class Copied { kOk, kInvalid, kTooLarge };

inline Copied CopyValue(SliceReader& in, uint64_t key, std::string* sink, size_t limit,
                        int depth = 0) {
  uint64_t value = 0;
  auto skip = [&](uint64_t n) {
    if (n > in.remaining()) return Copied::kInvalid;
    if (sink->size() + n > limit) return Copied::kTooLarge;
    return in.Skip(n, sink, nullptr) ? Copied::kOk : Copied::kInvalid;
  };
  switch (key & 7) {
    case kVarint:
      if (!in.ReadVarint(&value)) return Copied::kInvalid;
      AppendVarint(value, sink);
      return sink->size() > limit ? Copied::kTooLarge : Copied::kOk;
    case kFixed64:
      return skip(8);
    case kLengthDelimited:
      if (!in.ReadLength(&value)) return Copied::kInvalid;
      AppendVarint(value, sink);
      return skip(value);
    case kFixed32:
      return skip(4);
    case kStartGroup:
      if (depth >= kMaxGroupDepth) return Copied::kInvalid;
      while (true) {
        uint64_t inner = 0;
        if (!ReadKey(in, &inner)) return Copied::kInvalid;
        AppendVarint(inner, sink);
        if (sink->size() > limit) return Copied::kTooLarge;
        if ((inner & 7) == kEndGroup) {
          return (inner >> 3) == (key >> 3) ? Copied::kOk : Copied::kInvalid;
        }
        const Copied inner_copied = CopyValue(in, inner, sink, limit, depth + 1);
        if (inner_copied != Copied::kOk) return inner_copied;
      }
    default:  // An end-group key without its start; 6 and 7 are not wire types.
      return Copied::kInvalid;
  }
}

}  // namespace myops::wire::detail
