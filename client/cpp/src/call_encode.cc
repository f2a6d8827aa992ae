// The CallRequest's validation, size and hand-written encoding (see call_codec.h). Fields
// are written as protobuf's serializer writes them: in field-number order, proto3
// defaults left out (but a oneof member always written), repeated numbers packed.
#include <cassert>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "call_codec.h"

namespace myops::client::internal {
namespace {

// Field numbers of proto/myops/v1/myops.proto; every one is below 16, so every key is
// one byte.
namespace field {
constexpr int kRequestOp = 1, kRequestArguments = 2, kRequestDevice = 3, kRequestId = 4,
              kRequestResultRegions = 5, kRequestChunk = 6, kRequestMaxResponse = 7,
              kRequestInlineUnfit = 8;
constexpr int kChunkRequestId = 1, kChunkTensorIndex = 2, kChunkData = 3, kChunkOffset = 4;
constexpr int kArgumentName = 1, kArgumentValue = 2;
constexpr int kTensor = 1, kInt = 2, kFloat = 3, kBool = 4, kString = 5, kIntList = 6,
              kFloatList = 7, kTensorList = 8, kScalarType = 9, kNone = 10;
constexpr int kListValues = 1;  // IntList.values, FloatList.values, TensorList.tensors
constexpr int kTensorDType = 1, kTensorShape = 2, kTensorData = 3, kTensorSharedMemory = 4,
              kTensorChunkedByteSize = 5;
constexpr int kRefRegion = 1, kRefOffset = 2, kRefByteSize = 3;
}  // namespace field

constexpr int kVarint = 0, kFixed64 = 1, kLengthDelimited = 2;

constexpr uint8_t Key(int field, int wire_type) {
  return static_cast<uint8_t>((field << 3) | wire_type);
}

uint64_t VarintSize(uint64_t value) {
  uint64_t n = 1;
  while (value >= 0x80) {
    value >>= 7;
    ++n;
  }
  return n;
}

// Enums and int64 travel as their two's-complement 64-bit value.
uint64_t AsVarint(int64_t value) { return static_cast<uint64_t>(value); }

// A length-delimited field of `n` bytes: key, length, bytes.
uint64_t FieldSize(uint64_t n) { return 1 + VarintSize(n) + n; }

uint64_t PackedIntsSize(const std::vector<int64_t>& values) {
  uint64_t n = 0;
  for (int64_t v : values) n += VarintSize(AsVarint(v));
  return n;
}

// How a call's tensors with data travel: in a shared memory region (those `placement`
// places: Tensor.shared_memory), announced for chunks (`chunked`: chunked_byte_size), or
// as data.
struct TensorMode {
  const CallPlacement* placement = nullptr;
  bool chunked = false;
};

TensorMode ModeOf(const CallFields& call) { return {call.placement, call.chunked}; }

const RegionRef* RefOf(const TensorView& t, TensorMode mode) {
  return mode.placement == nullptr ? nullptr : mode.placement->Find(t);
}

uint64_t RefSize(const RegionRef& ref) {
  uint64_t n = ref.region.empty() ? 0 : FieldSize(ref.region.size());
  if (ref.offset != 0) n += 1 + VarintSize(ref.offset);
  if (ref.byte_size != 0) n += 1 + VarintSize(ref.byte_size);
  return n;
}

uint64_t TensorSize(const TensorView& t, TensorMode mode) {
  uint64_t n = 1 + VarintSize(AsVarint(static_cast<int32_t>(t.dtype)));
  if (!t.shape.empty()) n += FieldSize(PackedIntsSize(t.shape));
  if (const RegionRef* ref = RefOf(t, mode)) return n + FieldSize(RefSize(*ref));
  if (t.size_bytes != 0) {
    n += mode.chunked ? 1 + VarintSize(t.size_bytes) : FieldSize(t.size_bytes);
  }
  return n;
}

uint64_t ValueSize(const Value& value, TensorMode mode) {
  switch (value.kind()) {
    case Value::Kind::kNone:
      return FieldSize(0);
    case Value::Kind::kTensor:
      return FieldSize(TensorSize(value.tensor(), mode));
    case Value::Kind::kInt:
      return 1 + VarintSize(AsVarint(value.int_value()));
    case Value::Kind::kFloat:
      return 1 + 8;
    case Value::Kind::kBool:
      return 1 + 1;
    case Value::Kind::kString:
      return FieldSize(value.string_value().size());
    case Value::Kind::kIntList: {
      const std::vector<int64_t>& v = value.int_list();
      return FieldSize(v.empty() ? 0 : FieldSize(PackedIntsSize(v)));
    }
    case Value::Kind::kFloatList: {
      const std::vector<double>& v = value.float_list();
      return FieldSize(v.empty() ? 0 : FieldSize(8 * v.size()));
    }
    case Value::Kind::kTensorList: {
      uint64_t n = 0;
      for (const TensorView& t : value.tensor_list()) n += FieldSize(TensorSize(t, mode));
      return FieldSize(n);
    }
    case Value::Kind::kScalarType:
      return 1 + VarintSize(AsVarint(static_cast<int32_t>(value.scalar_type())));
  }
  return 0;
}

uint64_t ArgumentSize(absl::string_view name, const Value& value, TensorMode mode) {
  return (name.empty() ? 0 : FieldSize(name.size())) + FieldSize(ValueSize(value, mode));
}

// Writes into a buffer sized by the functions above.
class Writer {
 public:
  explicit Writer(uint8_t* out, TensorMode mode = {}) : out_(out), mode_(mode) {}
  uint8_t* position() const { return out_; }

  void Varint(uint64_t value) {
    while (value >= 0x80) {
      *out_++ = static_cast<uint8_t>((value & 0x7f) | 0x80);
      value >>= 7;
    }
    *out_++ = static_cast<uint8_t>(value);
  }
  void Fixed64(double value) {
    std::memcpy(out_, &value, 8);  // Little-endian host, as the wire.
    out_ += 8;
  }
  void Raw(const void* data, size_t n) {
    if (n != 0) std::memcpy(out_, data, n);
    out_ += n;
  }
  void Tag(int field, int wire_type) { *out_++ = Key(field, wire_type); }
  void Header(int field, uint64_t length) {
    Tag(field, kLengthDelimited);
    Varint(length);
  }
  void String(int field, absl::string_view s) {
    Header(field, s.size());
    Raw(s.data(), s.size());
  }
  void PackedInts(int field, const std::vector<int64_t>& values) {
    Header(field, PackedIntsSize(values));
    for (int64_t v : values) Varint(AsVarint(v));
  }
  void Ref(int field, const RegionRef& ref) {
    Header(field, RefSize(ref));
    if (!ref.region.empty()) String(field::kRefRegion, ref.region);
    if (ref.offset != 0) {
      Tag(field::kRefOffset, kVarint);
      Varint(ref.offset);
    }
    if (ref.byte_size != 0) {
      Tag(field::kRefByteSize, kVarint);
      Varint(ref.byte_size);
    }
  }
  void Tensor(int field, const TensorView& t) {
    Header(field, TensorSize(t, mode_));
    Tag(field::kTensorDType, kVarint);
    Varint(AsVarint(static_cast<int32_t>(t.dtype)));
    if (!t.shape.empty()) PackedInts(field::kTensorShape, t.shape);
    if (const RegionRef* ref = RefOf(t, mode_)) {
      Ref(field::kTensorSharedMemory, *ref);  // The data is in the region already.
    } else if (t.size_bytes != 0 && mode_.chunked) {
      Tag(field::kTensorChunkedByteSize, kVarint);
      Varint(t.size_bytes);
    } else if (t.size_bytes != 0) {
      Header(field::kTensorData, t.size_bytes);
      Raw(t.data, t.size_bytes);  // The one copy of the tensor's data.
    }
  }
  void Value(const client::Value& value);

 private:
  uint8_t* out_;
  const TensorMode mode_;
};

void Writer::Value(const client::Value& value) {
  switch (value.kind()) {
    case Value::Kind::kNone:
      Header(field::kNone, 0);
      return;
    case Value::Kind::kTensor:
      Tensor(field::kTensor, value.tensor());
      return;
    case Value::Kind::kInt:
      Tag(field::kInt, kVarint);
      Varint(AsVarint(value.int_value()));
      return;
    case Value::Kind::kFloat:
      Tag(field::kFloat, kFixed64);
      Fixed64(value.float_value());
      return;
    case Value::Kind::kBool:
      Tag(field::kBool, kVarint);
      Varint(value.bool_value() ? 1 : 0);
      return;
    case Value::Kind::kString:
      String(field::kString, value.string_value());
      return;
    case Value::Kind::kIntList: {
      const std::vector<int64_t>& v = value.int_list();
      Header(field::kIntList, v.empty() ? 0 : FieldSize(PackedIntsSize(v)));
      if (!v.empty()) PackedInts(field::kListValues, v);
      return;
    }
    case Value::Kind::kFloatList: {
      const std::vector<double>& v = value.float_list();
      Header(field::kFloatList, v.empty() ? 0 : FieldSize(8 * v.size()));
      if (!v.empty()) {
        Header(field::kListValues, 8 * v.size());
        for (double d : v) Fixed64(d);
      }
      return;
    }
    case Value::Kind::kTensorList: {
      const std::vector<TensorView> tensors = value.tensor_list();
      uint64_t n = 0;
      for (const TensorView& t : tensors) n += FieldSize(TensorSize(t, mode_));
      Header(field::kTensorList, n);
      for (const TensorView& t : tensors) Tensor(field::kListValues, t);
      return;
    }
    case Value::Kind::kScalarType:
      Tag(field::kScalarType, kVarint);
      Varint(AsVarint(static_cast<int32_t>(value.scalar_type())));
      return;
  }
}

// "argument 2" (positions count from 1, as in PyTorch's messages) or "argument \"beta\"".
std::string ArgumentName(size_t index, const NamedArg* named) {
  if (named != nullptr) return absl::StrCat("argument \"", named->name, "\"");
  return absl::StrCat("argument ", index + 1);
}

// max_message_bytes 0: no limit (the request may go chunked); none either for a tensor
// `placement` places in shared memory.
absl::Status ValidateTensor(const TensorView& t, const std::string& what, int max_message_bytes,
                            const CallPlacement* placement) {
  if (absl::Status status = ValidateTensorView(t, what); !status.ok()) return status;
  const bool placed = placement != nullptr && placement->Find(t) != nullptr;
  if (!placed && max_message_bytes != 0 && t.size_bytes > static_cast<size_t>(max_message_bytes)) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", t.size_bytes, " bytes exceed the client's max_message_bytes (",
                     max_message_bytes,
                     "); expected at most that (ClientOptions::max_message_bytes), or send it on a "
                     "CallStream, which sends larger tensors in chunks"));
  }
  return absl::OkStatus();
}

absl::Status ValidateValue(const Value& value, const std::string& what, int max_message_bytes,
                           const CallPlacement* placement) {
  switch (value.kind()) {
    case Value::Kind::kTensor:
      return ValidateTensor(value.tensor(), what, max_message_bytes, placement);
    case Value::Kind::kTensorList: {
      const std::vector<TensorView> tensors = value.tensor_list();
      for (size_t i = 0; i < tensors.size(); ++i) {
        absl::Status status = ValidateTensor(tensors[i], absl::StrCat(what, ", tensor ", i + 1),
                                             max_message_bytes, placement);
        if (!status.ok()) return status;
      }
      return absl::OkStatus();
    }
    case Value::Kind::kScalarType:
      if (DTypeItemSize(value.scalar_type()) == 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(what, ": dtype ", static_cast<int32_t>(value.scalar_type()),
                         " is not a known DType; expected one of the DType values"));
      }
      return absl::OkStatus();
    default:
      return absl::OkStatus();
  }
}

}  // namespace

uint64_t EncodedCallSize(const CallFields& call) {
  uint64_t n = call.op.empty() ? 0 : FieldSize(call.op.size());
  for (const Value& value : call.args) n += FieldSize(ArgumentSize("", value, ModeOf(call)));
  for (const NamedArg& arg : call.kwargs) {
    n += FieldSize(ArgumentSize(arg.name, arg.value, ModeOf(call)));
  }
  if (!call.device.empty()) n += FieldSize(call.device.size());
  if (call.request_id != 0) n += 1 + VarintSize(call.request_id);
  if (call.placement != nullptr && !call.placement->result.region.empty()) {
    n += FieldSize(RefSize(call.placement->result)) + 2;  // result_regions, inline_unfit_results
  }
  if (call.max_response_message_bytes != 0) {
    n += 1 + VarintSize(call.max_response_message_bytes);
  }
  return n;
}

absl::Status ValidateCall(const CallFields& call, int max_message_bytes, bool chunkable) {
  const int tensor_limit = chunkable ? 0 : max_message_bytes;
  if (call.op.empty()) {
    return absl::InvalidArgumentError(
        "op is empty; expected \"namespace::name\" or \"namespace::name.overload\"");
  }
  for (size_t i = 0; i < call.args.size(); ++i) {
    absl::Status status =
        ValidateValue(call.args[i], ArgumentName(i, nullptr), tensor_limit, call.placement);
    if (!status.ok()) return status;
  }
  for (size_t i = 0; i < call.kwargs.size(); ++i) {
    const NamedArg& arg = call.kwargs[i];
    if (arg.name.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "keyword argument ", i, " has an empty name; expected the schema's argument name"));
    }
    for (size_t j = 0; j < i; ++j) {
      if (call.kwargs[j].name == arg.name) {
        return absl::InvalidArgumentError(absl::StrCat(
            "argument \"", arg.name, "\" is given twice; expected each keyword at most once"));
      }
    }
    absl::Status status =
        ValidateValue(arg.value, ArgumentName(i, &arg), tensor_limit, call.placement);
    if (!status.ok()) return status;
  }
  CallFields head = call;
  head.chunked = head.chunked || chunkable;  // A chunked request's header must fit.
  const uint64_t size = EncodedCallSize(head);
  if (size > static_cast<uint64_t>(max_message_bytes)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the request for ", call.op, " takes ", size,
        chunkable ? " bytes encoded without its tensors' data (their dtypes, shapes and the "
                    "other arguments)"
                  : " bytes encoded (its tensors' data plus their dtypes, shapes and the other "
                    "arguments)",
        ", over the client's max_message_bytes (", max_message_bytes,
        "); expected at most that (ClientOptions::max_message_bytes)",
        chunkable ? "" : ", or send it on a CallStream, which sends larger tensors in chunks"));
  }
  return absl::OkStatus();
}

grpc::ByteBuffer EncodeCallRequest(const CallFields& call, SendBufferPool& pool) {
  const uint64_t size = EncodedCallSize(call);
  grpc::Slice buffer = pool.Acquire(size);
  uint8_t* const begin = const_cast<uint8_t*>(buffer.begin());  // Ours until sent.
  Writer out(begin, ModeOf(call));
  if (!call.op.empty()) out.String(field::kRequestOp, call.op);
  auto argument = [&](absl::string_view name, const Value& value) {
    out.Header(field::kRequestArguments, ArgumentSize(name, value, ModeOf(call)));
    if (!name.empty()) out.String(field::kArgumentName, name);
    out.Header(field::kArgumentValue, ValueSize(value, ModeOf(call)));
    out.Value(value);
  };
  for (const Value& value : call.args) argument("", value);
  for (const NamedArg& arg : call.kwargs) argument(arg.name, arg.value);
  if (!call.device.empty()) out.String(field::kRequestDevice, call.device);
  if (call.request_id != 0) {
    out.Tag(field::kRequestId, kVarint);
    out.Varint(call.request_id);
  }
  if (call.placement != nullptr && !call.placement->result.region.empty()) {
    out.Ref(field::kRequestResultRegions, call.placement->result);
  }
  if (call.max_response_message_bytes != 0) {
    out.Tag(field::kRequestMaxResponse, kVarint);
    out.Varint(call.max_response_message_bytes);
  }
  if (call.placement != nullptr && !call.placement->result.region.empty()) {
    out.Tag(field::kRequestInlineUnfit, kVarint);
    out.Varint(1);
  }
  assert(static_cast<uint64_t>(out.position() - begin) == size);
  return grpc::ByteBuffer(&buffer, 1);
}

std::vector<TensorView> ChunkedTensors(const CallFields& call) {
  std::vector<TensorView> out;
  auto add = [&out](const Value& value) {
    if (value.kind() == Value::Kind::kTensor && value.tensor().size_bytes != 0) {
      out.push_back(value.tensor());
    }
    if (value.kind() == Value::Kind::kTensorList) {
      for (const TensorView& t : value.tensor_list()) {
        if (t.size_bytes != 0) out.push_back(t);
      }
    }
  };
  for (const Value& value : call.args) add(value);
  for (const NamedArg& arg : call.kwargs) add(arg.value);
  return out;
}

grpc::ByteBuffer EncodeCallChunk(uint64_t request_id, uint32_t tensor_index, uint64_t offset,
                                 const void* data, size_t n, SendBufferPool& pool) {
  uint64_t chunk = 1 + VarintSize(request_id) + FieldSize(n) + 1 + VarintSize(offset);
  if (tensor_index != 0) chunk += 1 + VarintSize(tensor_index);
  const uint64_t size = FieldSize(chunk);
  grpc::Slice buffer = pool.Acquire(size);
  uint8_t* const begin = const_cast<uint8_t*>(buffer.begin());  // Ours until sent.
  Writer out(begin);
  out.Header(field::kRequestChunk, chunk);
  out.Tag(field::kChunkRequestId, kVarint);  // Written even when 0: the key says "a chunk".
  out.Varint(request_id);
  if (tensor_index != 0) {
    out.Tag(field::kChunkTensorIndex, kVarint);
    out.Varint(tensor_index);
  }
  out.Header(field::kChunkData, n);
  out.Raw(data, n);  // The one copy of this piece of the tensor.
  out.Tag(field::kChunkOffset, kVarint);
  out.Varint(offset);
  assert(static_cast<uint64_t>(out.position() - begin) == size);
  return grpc::ByteBuffer(&buffer, 1);
}

}  // namespace myops::client::internal
