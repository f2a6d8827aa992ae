// Hand-written protobuf encoding of tensor-carrying messages (see tensor_wire.h).
#include "myops/wire/tensor_wire.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"

namespace myops::wire {
namespace {

constexpr int kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5;
constexpr int kTensorDataField = 3;  // myops.v1.Tensor.data

constexpr uint64_t Key(int field, int wire_type) {
  return (static_cast<uint64_t>(field) << 3) | static_cast<uint64_t>(wire_type);
}

size_t VarintSize(uint64_t value) {
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

bool ReadKey(SliceReader& in, uint64_t* key) {
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

Copied CopyValue(SliceReader& in, uint64_t key, std::string* sink, size_t limit, int depth = 0) {
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

}  // namespace

void AppendVarint(uint64_t value, std::string* out) {
  while (value >= 0x80) {
    out->push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out->push_back(static_cast<char>(value));
}

bool Flatten(const grpc::ByteBuffer& buffer, std::string* out) {
  out->clear();
  std::vector<grpc::Slice> slices;
  if (!buffer.Dump(&slices).ok()) return false;
  for (const grpc::Slice& s : slices) {
    out->append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  return true;
}

const uint8_t* TensorData::contiguous() const {
  static const uint8_t kEmpty = 0;
  if (spans_.empty()) return &kEmpty;
  return spans_.size() == 1 ? spans_.front().first : nullptr;
}

void TensorData::CopyTo(void* dst) const {
  auto* out = static_cast<uint8_t*>(dst);
  for (const Span& span : spans_) {
    std::memcpy(out, span.first, span.second);
    out += span.second;
  }
}

void TensorData::AppendTo(std::string* out) const {
  out->reserve(out->size() + size_);
  for (const Span& span : spans_) {
    out->append(reinterpret_cast<const char*>(span.first), span.second);
  }
}

grpc::ByteBuffer EncodeWithTensorData(int tensor_field, const myops::v1::Tensor& head,
                                      const grpc::Slice& data,
                                      const google::protobuf::MessageLite& rest) {
  const std::string head_bytes = head.SerializeAsString();
  const uint64_t n = data.size();
  const uint64_t data_key = Key(kTensorDataField, kLengthDelimited);
  std::string prefix;
  prefix.reserve(head_bytes.size() + 32);
  AppendVarint(Key(tensor_field, kLengthDelimited), &prefix);
  AppendVarint(head_bytes.size() + VarintSize(data_key) + VarintSize(n) + n, &prefix);
  prefix += head_bytes;
  AppendVarint(data_key, &prefix);
  AppendVarint(n, &prefix);
  // Field order is free in protobuf: `rest` after the tensor parses the same.
  grpc::Slice slices[3] = {grpc::Slice(prefix), data, grpc::Slice(rest.SerializeAsString())};
  return grpc::ByteBuffer(slices, 3);
}

absl::Status ParseWithTensorData(const grpc::ByteBuffer& bytes, int tensor_field,
                                 google::protobuf::MessageLite* message, TensorData* data) {
  *data = TensorData();
  auto invalid = [&] {
    return absl::InvalidArgumentError(
        absl::StrCat("the ", bytes.Length(), " bytes are not a valid ", message->GetTypeName()));
  };
  std::vector<grpc::Slice> slices;
  std::vector<Span> spans;
  size_t size = 0;
  if (!bytes.Dump(&slices).ok()) return invalid();
  SliceReader in(slices);
  std::string rest;         // Every top-level field but the tensor, as received.
  std::string tensor_rest;  // The tensor's fields but its data, over all its occurrences.
  bool has_tensor = false;
  // The head (everything but the data) is copied and parsed: bounded, so that no message
  // costs more than its own size plus kMaxHeadBytes, however its fields are crafted.
  auto too_large = [&] {
    return absl::InvalidArgumentError(absl::StrCat(
        "the ", message->GetTypeName(), "'s fields other than the tensor data take more than ",
        kMaxHeadBytes, " bytes; at most that is accepted"));
  };
  // Copies one field's value into `sink`, which shares kMaxHeadBytes with `other`.
  auto copy = [&](uint64_t key, std::string* sink, const std::string& other) {
    AppendVarint(key, sink);
    if (sink->size() + other.size() > kMaxHeadBytes) return Copied::kTooLarge;
    return CopyValue(in, key, sink, kMaxHeadBytes - other.size());
  };
  while (in.remaining() > 0) {
    uint64_t key = 0;
    if (!ReadKey(in, &key)) return invalid();
    if (key != Key(tensor_field, kLengthDelimited)) {
      const Copied copied = copy(key, &rest, tensor_rest);
      if (copied != Copied::kOk) return copied == Copied::kTooLarge ? too_large() : invalid();
      continue;
    }
    uint64_t length = 0;
    if (!in.ReadLength(&length) || length > in.remaining()) return invalid();
    has_tensor = true;
    const uint64_t end = in.position() + length;
    while (in.position() < end) {
      uint64_t tensor_key = 0;
      if (!ReadKey(in, &tensor_key)) return invalid();
      if (tensor_key == Key(kTensorDataField, kLengthDelimited)) {
        uint64_t n = 0;
        if (!in.ReadLength(&n) || n > end - std::min(end, in.position())) return invalid();
        spans.clear();  // The last occurrence wins, as protobuf merges bytes fields.
        size = static_cast<size_t>(n);
        if (!in.Skip(n, nullptr, &spans)) return invalid();
      } else {
        const Copied copied = copy(tensor_key, &tensor_rest, rest);
        if (copied != Copied::kOk) return copied == Copied::kTooLarge ? too_large() : invalid();
      }
      if (in.position() > end) return invalid();  // A field ran past the tensor's length.
    }
  }
  // The tensor's own key and length, added below, are not the client's to inflate.
  if (has_tensor) {
    AppendVarint(Key(tensor_field, kLengthDelimited), &rest);
    AppendVarint(tensor_rest.size(), &rest);
    rest += tensor_rest;
  }
  if (!message->ParseFromString(rest)) return invalid();
  data->slices_ = std::move(slices);  // The spans point into these; moving keeps them valid.
  data->spans_ = std::move(spans);
  data->size_ = size;
  return absl::OkStatus();
}

}  // namespace myops::wire
