// Hand-written protobuf encoding of tensor-carrying messages (see tensor_wire.h).
#include "myops/wire/tensor_wire.h"

#include "myops/wire/slice_reader.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"

namespace myops::wire {
using namespace detail;  // NOLINT: this file is the reader's other half

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
