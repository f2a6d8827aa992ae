// The generic call messages' wire format (see call_wire.h).
#include "myops/wire/call_wire.h"

#include "absl/strings/str_cat.h"
#include "myops/wire/slice_reader.h"

namespace myops::wire {
namespace {
using namespace detail;  // NOLINT: the reader's helpers

// The messages the head checks descend into; kData marks tensor data (Tensor.data,
// ModelInferRequest.raw_input_contents), kTyped a packed field of InferTensorContents.
enum class Level {
  kCallRequest,
  kArgument,
  kValue,
  kTensorList,
  kTensor,
  kInferRequest,
  kInferInput,
  kContents,
  kData,
  kTyped,
  kOther
};

Level ChildOf(Level level, uint64_t key) {
  if ((key & 7) != kLengthDelimited) return Level::kOther;
  const uint64_t field = key >> 3;
  switch (level) {
    case Level::kCallRequest:  // arguments
      return field == 2 ? Level::kArgument : Level::kOther;
    case Level::kArgument:  // value
      return field == 2 ? Level::kValue : Level::kOther;
    case Level::kValue:  // tensor, tensor_list
      return field == 1 ? Level::kTensor : field == 8 ? Level::kTensorList : Level::kOther;
    case Level::kTensorList:  // tensors
      return field == 1 ? Level::kTensor : Level::kOther;
    case Level::kTensor:  // data
      return field == kTensorDataField ? Level::kData : Level::kOther;
    case Level::kInferRequest:  // inputs, raw_input_contents
      return field == 5 ? Level::kInferInput : field == 7 ? Level::kData : Level::kOther;
    case Level::kInferInput:  // contents
      return field == 5 ? Level::kContents : Level::kOther;
    case Level::kContents:  // packed bool .. fp64 contents (bytes_contents is head)
      return field >= 1 && field <= 7 ? Level::kTyped : Level::kOther;
    default:
      return Level::kOther;
  }
}

enum class Walked { kOk, kInvalid, kTooLarge };

// Bytes of the array protobuf parses `length` bytes of packed field `field` of
// InferTensorContents into: one element per byte at most for the varint fields (bool,
// int32, int64, uint32, uint64), the bytes themselves for the fixed ones (fp32, fp64).
uint64_t PackedArrayBytes(uint64_t field, uint64_t length) {
  static constexpr uint64_t kElementBytes[] = {0, 1, 4, 8, 4, 8, 1, 1};
  return length * kElementBytes[field < 8 ? field : 0];
}

// Walks the fields up to `end`, adding the bytes that are not tensor data to *head and
// the array bytes of packed typed contents (PackedArrayBytes) to *typed.
Walked Walk(SliceReader& in, uint64_t end, Level level, uint64_t* head, uint64_t* typed,
            std::string* scratch) {
  while (in.position() < end) {
    const uint64_t start = in.position();
    uint64_t key = 0;
    if (!ReadKey(in, &key)) return Walked::kInvalid;
    const Level child = ChildOf(level, key);
    if (child == Level::kOther) {
      scratch->clear();
      const Copied copied = CopyValue(in, key, scratch, kMaxHeadBytes);
      if (copied != Copied::kOk) {
        return copied == Copied::kTooLarge ? Walked::kTooLarge : Walked::kInvalid;
      }
      *head += in.position() - start;
    } else {
      uint64_t length = 0;
      if (!in.ReadLength(&length) || length > end - std::min(end, in.position())) {
        return Walked::kInvalid;
      }
      *head += in.position() - start;
      if (child == Level::kData || child == Level::kTyped) {
        if (!in.Skip(length, nullptr, nullptr)) return Walked::kInvalid;
        if (child == Level::kTyped) *typed += PackedArrayBytes(key >> 3, length);
      } else {
        const Walked inner = Walk(in, in.position() + length, child, head, typed, scratch);
        if (inner != Walked::kOk) return inner;
      }
    }
    if (*head > kMaxHeadBytes) return Walked::kTooLarge;
    if (in.position() > end) return Walked::kInvalid;  // a field ran past its message
  }
  return Walked::kOk;
}

}  // namespace

absl::StatusOr<uint64_t> CheckCallRequestHead(const grpc::ByteBuffer& bytes) {
  if (bytes.Length() <= kUnwalkedBytes) return bytes.Length();
  std::vector<grpc::Slice> slices;
  if (!bytes.Dump(&slices).ok()) {
    return absl::InvalidArgumentError("the request's bytes could not be read");
  }
  SliceReader in(slices);
  uint64_t head = 0, typed = 0;
  std::string scratch;
  switch (Walk(in, in.remaining(), Level::kCallRequest, &head, &typed, &scratch)) {
    case Walked::kOk:
      return head;
    case Walked::kTooLarge:
      return absl::InvalidArgumentError(
          absl::StrCat("the myops.v1.CallRequest's fields other than tensor data take more than ",
                       kMaxHeadBytes, " bytes; at most that is accepted"));
    case Walked::kInvalid:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("the ", bytes.Length(), " bytes are not a valid myops.v1.CallRequest"));
}

absl::StatusOr<InferRequestBytes> CheckInferRequestHead(const grpc::ByteBuffer& bytes) {
  // All of a small message may be head, or packed 1-byte varints of int64 contents.
  // Larger ones are walked, so that what the parse may take is known within a few bytes.
  if (bytes.Length() <= kUnwalkedBytes) {
    return InferRequestBytes{bytes.Length(), 8 * bytes.Length()};
  }
  std::vector<grpc::Slice> slices;
  if (!bytes.Dump(&slices).ok()) {
    return absl::InvalidArgumentError("the request's bytes could not be read");
  }
  SliceReader in(slices);
  InferRequestBytes size;
  std::string scratch;
  switch (
      Walk(in, in.remaining(), Level::kInferRequest, &size.head, &size.packed_arrays, &scratch)) {
    case Walked::kOk:
      return size;
    case Walked::kTooLarge:
      return absl::InvalidArgumentError(absl::StrCat(
          "the inference.ModelInferRequest's fields other than tensor contents take more "
          "than ",
          kMaxHeadBytes, " bytes; at most that is accepted"));
    case Walked::kInvalid:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("the ", bytes.Length(), " bytes are not a valid inference.ModelInferRequest"));
}

void MessageWriter::AppendBytes(const std::string& encoded) {
  pending_ += encoded;
  size_ += encoded.size();
}

void MessageWriter::AppendData(int field, const grpc::Slice& data) {
  std::string key;
  AppendVarint(Key(field, kLengthDelimited), &key);
  AppendVarint(data.size(), &key);
  AppendBytes(key);
  if (data.size() == 0) return;
  Flush();
  slices_.push_back(data);
  size_ += data.size();
}

void MessageWriter::AppendMessage(int field, MessageWriter inner) {
  std::string key;
  AppendVarint(Key(field, kLengthDelimited), &key);
  AppendVarint(inner.size_, &key);
  AppendBytes(key);
  inner.Flush();
  if (!inner.slices_.empty()) Flush();
  for (grpc::Slice& s : inner.slices_) slices_.push_back(std::move(s));
  size_ += inner.size_;
}

void MessageWriter::AppendTensor(int field, const myops::v1::Tensor& head,
                                 const grpc::Slice& data) {
  MessageWriter tensor;
  tensor.AppendBytes(head.SerializeAsString());
  tensor.AppendData(kTensorDataField, data);
  AppendMessage(field, std::move(tensor));
}

void MessageWriter::Flush() {
  if (pending_.empty()) return;
  slices_.emplace_back(pending_);
  pending_.clear();
}

grpc::ByteBuffer MessageWriter::Finish() {
  Flush();
  return grpc::ByteBuffer(slices_.data(), slices_.size());
}

}  // namespace myops::wire
