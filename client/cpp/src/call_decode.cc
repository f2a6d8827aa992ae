// Reading CallResponse and CallStreamResponse bytes (see call_codec.h), and the
// operator listing.
//
// One pass over the received slices rewrites the message: every Tensor.data field (in
// CallResponse.outputs[].tensor and .tensor_list.tensors[]) has its bytes copied once
// into a string of their own and is replaced by an 8-byte placeholder holding that
// string's index; everything else is copied as is (it is small). protobuf then parses
// the rewritten bytes, so its rules hold exactly (field order, merges, last value wins,
// oneof), and each tensor takes its data by the placeholder it kept.
#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "call_codec.h"
#include "codec.h"
#include "grpc_status.h"
#include "myops/wire/slice_reader.h"
#include "myops/wire/tensor_wire.h"

namespace myops::client::internal {
namespace {

namespace v1 = ::myops::v1;
using wire::detail::SliceReader;

constexpr size_t kPlaceholderBytes = 8;

// The messages whose fields lead to tensor data, and the data field itself.
enum class Type { kOpaque, kStreamResponse, kCallResponse, kValue, kTensorList, kTensor };

Type FieldType(Type parent, uint64_t field) {
  switch (parent) {
    case Type::kStreamResponse:  // CallStreamResponse.response
      return field == 2 ? Type::kCallResponse : Type::kOpaque;
    case Type::kCallResponse:  // CallResponse.outputs
      return field == 1 ? Type::kValue : Type::kOpaque;
    case Type::kValue:  // Value.tensor, Value.tensor_list
      return field == 1 ? Type::kTensor : field == 8 ? Type::kTensorList : Type::kOpaque;
    case Type::kTensorList:  // TensorList.tensors
      return field == 1 ? Type::kTensor : Type::kOpaque;
    default:
      return Type::kOpaque;
  }
}

constexpr bool IsTensorData(Type parent, uint64_t field) {
  return parent == Type::kTensor && field == 3;
}

// Rewrites the fields of a message of `type` that end at `end` into `out` (see the file
// comment), reading them by protobuf's rules. False when the bytes are malformed.
bool Rewrite(SliceReader& in, uint64_t end, Type type, std::string* out,
             std::vector<std::string>* data, int depth) {
  if (depth > 8) return false;  // Deeper than any path to tensor data.
  while (in.position() < end) {
    uint64_t key = 0;
    if (!wire::detail::ReadKey(in, &key)) return false;
    wire::AppendVarint(key, out);
    const uint64_t field = key >> 3;
    const Type child = FieldType(type, field);
    if ((key & 7) != wire::detail::kLengthDelimited ||
        (child == Type::kOpaque && !IsTensorData(type, field))) {
      constexpr size_t kNoLimit = std::numeric_limits<size_t>::max() / 2;
      if (wire::detail::CopyValue(in, key, out, kNoLimit) != wire::detail::Copied::kOk) {
        return false;
      }
      if (in.position() > end) return false;  // A field ran past its message.
      continue;
    }
    uint64_t length = 0;
    if (!in.ReadLength(&length) || length > end - std::min(end, in.position())) return false;
    if (IsTensorData(type, field)) {
      std::string bytes;
      bytes.reserve(length);
      if (!in.Skip(length, &bytes, nullptr)) return false;  // The one copy of the data.
      const uint64_t index = data->size();
      data->push_back(std::move(bytes));
      wire::AppendVarint(kPlaceholderBytes, out);
      out->append(reinterpret_cast<const char*>(&index), kPlaceholderBytes);
      continue;
    }
    std::string inner;
    if (!Rewrite(in, in.position() + length, child, &inner, data, depth + 1)) return false;
    wire::AppendVarint(inner.size(), out);
    out->append(inner);
  }
  return in.position() == end;
}

// Parses `bytes` as a message of `type` into `message`, the tensors' data into `data`.
bool Parse(const grpc::ByteBuffer& bytes, Type type, google::protobuf::MessageLite* message,
           std::vector<std::string>* data) {
  std::vector<grpc::Slice> slices;
  if (!bytes.Dump(&slices).ok()) return false;
  SliceReader in(slices);
  std::string head;
  return Rewrite(in, in.remaining(), type, &head, data, 0) && message->ParseFromString(head);
}

// A result tensor written to `region`: in place (region->owner set) or a copy.
absl::StatusOr<Tensor> RegionTensor(const v1::Tensor& tensor, const ResponseRegion* region,
                                    const std::string& what) {
  const v1::SharedMemoryRef& ref = tensor.shared_memory();
  if (region == nullptr || ref.region() != region->name || !tensor.data().empty() ||
      ref.offset() > region->size || ref.byte_size() > region->size - ref.offset()) {
    return absl::InternalError(
        absl::StrCat(what, ": a shared memory reference to region '", ref.region(), "' at ",
                     ref.offset(), " (", ref.byte_size(), " bytes) that this call did not give"));
  }
  const auto dtype = static_cast<DType>(tensor.dtype());
  std::vector<int64_t> shape(tensor.shape().begin(), tensor.shape().end());
  char* data = region->data + ref.offset();
  const auto size = static_cast<size_t>(ref.byte_size());
  Tensor result = region->in_place
                      ? Tensor::InMemoryOf(dtype, std::move(shape), data, size, region->owner)
                      : Tensor(dtype, std::move(shape), std::string(data, size));
  if (absl::Status status = ValidateTensorView(result.view(), what); !status.ok()) {
    return absl::InternalError(status.message());
  }
  return result;
}

absl::StatusOr<Tensor> TakeTensor(const v1::Tensor& tensor, std::vector<std::string>& data,
                                  const ResponseRegion* region, const std::string& what) {
  if (tensor.has_shared_memory()) return RegionTensor(tensor, region, what);
  std::string bytes;
  if (tensor.data().size() == kPlaceholderBytes) {
    uint64_t index = 0;
    std::memcpy(&index, tensor.data().data(), kPlaceholderBytes);
    if (index >= data.size()) return absl::InternalError(absl::StrCat(what, ": bad data"));
    bytes.swap(data[index]);
  } else if (!tensor.data().empty()) {
    return absl::InternalError(absl::StrCat(what, ": bad data"));
  }
  Tensor result(static_cast<DType>(tensor.dtype()),
                std::vector<int64_t>(tensor.shape().begin(), tensor.shape().end()),
                std::move(bytes));
  if (absl::Status status = ValidateTensorView(result.view(), what); !status.ok()) {
    return absl::InternalError(status.message());
  }
  return result;
}

absl::StatusOr<Value> TakeValue(const v1::Value& value, std::vector<std::string>& data,
                                const ResponseRegion* region, const std::string& what) {
  switch (value.kind_case()) {
    case v1::Value::kTensor: {
      absl::StatusOr<Tensor> tensor = TakeTensor(value.tensor(), data, region, what);
      if (!tensor.ok()) return tensor.status();
      return Value(*std::move(tensor));
    }
    case v1::Value::kIntValue:
      return Value(value.int_value());
    case v1::Value::kFloatValue:
      return Value(value.float_value());
    case v1::Value::kBoolValue:
      return Value(value.bool_value());
    case v1::Value::kStringValue:
      return Value(value.string_value());
    case v1::Value::kIntList:
      return Value(
          std::vector<int64_t>(value.int_list().values().begin(), value.int_list().values().end()));
    case v1::Value::kFloatList:
      return Value(std::vector<double>(value.float_list().values().begin(),
                                       value.float_list().values().end()));
    case v1::Value::kTensorList: {
      std::vector<Tensor> tensors;
      for (int i = 0; i < value.tensor_list().tensors_size(); ++i) {
        absl::StatusOr<Tensor> tensor = TakeTensor(value.tensor_list().tensors(i), data, region,
                                                   absl::StrCat(what, ", tensor ", i));
        if (!tensor.ok()) return tensor.status();
        tensors.push_back(*std::move(tensor));
      }
      return Value(std::move(tensors));
    }
    case v1::Value::kScalarType: {
      const auto dtype = static_cast<DType>(value.scalar_type());
      if (DTypeItemSize(dtype) == 0) {
        return absl::InternalError(absl::StrCat(what, ": dtype ", value.scalar_type(),
                                                " is not a DType this client knows"));
      }
      return Value(dtype);
    }
    case v1::Value::kNone:
      return Value();
    case v1::Value::KIND_NOT_SET:
      break;
  }
  return absl::InternalError(
      absl::StrCat(what, " has no value (or one this client does not know)"));
}

absl::StatusOr<CallResult> TakeResult(const v1::CallResponse& response,
                                      std::vector<std::string>& data,
                                      const ResponseRegion* region) {
  CallResult result;
  result.outputs.reserve(response.outputs_size());
  for (int i = 0; i < response.outputs_size(); ++i) {
    absl::StatusOr<Value> value =
        TakeValue(response.outputs(i), data, region, absl::StrCat("server response output ", i));
    if (!value.ok()) return value.status();
    result.outputs.push_back(*std::move(value));
  }
  result.timing = DecodeTiming(response.timing());
  result.request_id = response.request_id();
  return result;
}

absl::Status Malformed(const grpc::ByteBuffer& bytes, absl::string_view type) {
  return absl::InternalError(
      absl::StrCat("the server's response: the ", bytes.Length(), " bytes are not a valid ", type));
}

}  // namespace

absl::StatusOr<CallResult> DecodeCallResponse(const grpc::ByteBuffer& bytes,
                                              const ResponseRegion* region) {
  v1::CallResponse response;
  std::vector<std::string> data;
  if (!Parse(bytes, Type::kCallResponse, &response, &data)) {
    return Malformed(bytes, response.GetTypeName());
  }
  return TakeResult(response, data, region);
}

CallStreamResult DecodeCallStreamResponse(const grpc::ByteBuffer& bytes) {
  ParsedStreamResponse parsed = ParseCallStreamResponse(bytes);
  return TakeCallStreamResult(bytes, parsed);
}

ParsedStreamResponse ParseCallStreamResponse(const grpc::ByteBuffer& bytes) {
  ParsedStreamResponse parsed;
  parsed.ok = Parse(bytes, Type::kStreamResponse, &parsed.response, &parsed.data);
  return parsed;
}

void SetTensorData(ParsedStreamResponse& parsed, v1::Tensor* tensor, std::string bytes) {
  const uint64_t index = parsed.data.size();
  parsed.data.push_back(std::move(bytes));
  tensor->set_data(reinterpret_cast<const char*>(&index), kPlaceholderBytes);
  tensor->clear_chunked_byte_size();
}

CallStreamResult TakeCallStreamResult(const grpc::ByteBuffer& bytes, ParsedStreamResponse& parsed,
                                      const RegionOf& region_of) {
  const v1::CallStreamResponse& response = parsed.response;
  std::vector<std::string>& data = parsed.data;
  CallStreamResult result;
  if (!parsed.ok) {
    result.result = Malformed(bytes, response.GetTypeName());
    return result;
  }
  result.request_id = response.request_id();
  // Taken for an error too: the request's region is free once it is answered.
  const std::optional<ResponseRegion> region =
      region_of ? region_of(result.request_id) : std::nullopt;
  switch (response.result_case()) {
    case v1::CallStreamResponse::kResponse:
      result.result = TakeResult(response.response(), data, region ? &*region : nullptr);
      if (result.result.ok()) result.result->request_id = result.request_id;
      break;
    case v1::CallStreamResponse::kError: {
      absl::Status status = ToAbslStatus(response.error().code(), response.error().message());
      result.result = status.ok() ? absl::InternalError(absl::StrCat(
                                        "server sent an error with code OK for request ",
                                        result.request_id, ": ", response.error().message()))
                                  : status;
      break;
    }
    case v1::CallStreamResponse::RESULT_NOT_SET:
      result.result = absl::InternalError(absl::StrCat(
          "server sent a stream response without result or error for request ", result.request_id));
      break;
  }
  return result;
}

std::vector<OperatorDescription> DecodeOperators(const v1::ListOperatorsResponse& response) {
  std::vector<OperatorDescription> ops;
  ops.reserve(response.operators_size());
  for (const v1::OperatorInfo& info : response.operators()) {
    OperatorDescription op;
    op.name = info.name();
    op.overload = info.overload();
    op.schema = info.schema();
    for (const v1::ArgumentInfo& arg : info.arguments()) {
      op.arguments.push_back({arg.name(), arg.type(), static_cast<SchemaKind>(arg.kind()),
                              arg.optional(), arg.has_default(), arg.default_value(),
                              arg.kwarg_only()});
    }
    for (const v1::ReturnInfo& ret : info.returns()) {
      op.returns.push_back({ret.name(), ret.type(), static_cast<SchemaKind>(ret.kind())});
    }
    op.devices.assign(info.devices().begin(), info.devices().end());
    op.served = info.served();
    op.reason = info.reason();
    ops.push_back(std::move(op));
  }
  return ops;
}

}  // namespace myops::client::internal
