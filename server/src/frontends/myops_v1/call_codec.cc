// Generic calls' protobuf side (see frontends/myops_v1/call_codec.h).
#include "frontends/myops_v1/call_codec.h"

#include <grpc/slice.h>
#include <grpcpp/support/proto_buffer_reader.h>

#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "myops/wire/call_wire.h"

namespace myops::server {
namespace {

using myops::v1::Value;

// Where a call's tensors may be besides their own data.
struct Sources {
  CallShm* shm;
  ChunkedTensors* chunks;
};

// Tensor `t`, from its data, its shared memory region or its assembled chunks.
absl::StatusOr<TensorView> AnyTensor(const myops::v1::Tensor& t, const std::string& field,
                                     const TensorLimits& limits, const Sources& from) {
  if (t.chunked_byte_size() != 0) return DecodeChunkedTensor(t, field, limits, from.chunks);
  if (t.has_shared_memory()) return DecodeRegionTensor(t, field, limits, from.shm);
  return DecodeTensor(t, field, limits);
}

// Argument `index` (from 0) as errors name it.
std::string FieldName(const myops::v1::Argument& arg, int index) {
  return arg.name().empty() ? absl::StrCat("argument ", index + 1)
                            : absl::StrCat("argument '", arg.name(), "'");
}

// Decodes argument `index`; its field name is made only where a check may name it.
absl::Status Decode(const myops::v1::Argument& arg, int index, const TensorLimits& limits,
                    const Sources& from, server::Value* out) {
  using K = server::Value::Kind;
  const Value& in = arg.value();
  switch (in.kind_case()) {
    case Value::kTensor: {
      auto view = AnyTensor(in.tensor(), FieldName(arg, index), limits, from);
      if (!view.ok()) return view.status();
      out->kind = K::kTensor;
      out->tensor = std::move(*view);
      return absl::OkStatus();
    }
    case Value::kIntValue:
      out->kind = K::kInt;
      out->int_value = in.int_value();
      return absl::OkStatus();
    case Value::kFloatValue:
      out->kind = K::kFloat;
      out->float_value = in.float_value();
      return absl::OkStatus();
    case Value::kBoolValue:
      out->kind = K::kBool;
      out->bool_value = in.bool_value();
      return absl::OkStatus();
    case Value::kStringValue:
      out->kind = K::kString;
      out->string_value = in.string_value();
      return absl::OkStatus();
    case Value::kIntList:
      out->kind = K::kIntList;
      out->int_list.assign(in.int_list().values().begin(), in.int_list().values().end());
      return absl::OkStatus();
    case Value::kFloatList:
      out->kind = K::kFloatList;
      out->float_list.assign(in.float_list().values().begin(), in.float_list().values().end());
      return absl::OkStatus();
    case Value::kTensorList: {
      out->kind = K::kTensorList;
      const auto& tensors = in.tensor_list().tensors();
      const std::string field = FieldName(arg, index);
      for (int i = 0; i < tensors.size(); ++i) {
        auto view = AnyTensor(tensors[i], absl::StrCat(field, "[", i, "]"), limits, from);
        if (!view.ok()) return view.status();
        out->tensor_list.push_back(std::move(*view));
      }
      return absl::OkStatus();
    }
    case Value::kScalarType: {
      const std::optional<DType> dtype = DTypeFromWire(in.scalar_type());
      if (!dtype) {
        return absl::InvalidArgumentError(
            absl::StrCat(FieldName(arg, index), ": unknown scalar_type ", in.scalar_type(),
                         "; expected one of ", DTypeNameList(/*wire_names=*/true)));
      }
      out->kind = K::kScalarType;
      out->scalar_type = *dtype;
      return absl::OkStatus();
    }
    case Value::kNone:
      out->kind = K::kNone;
      return absl::OkStatus();
    case Value::KIND_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat(FieldName(arg, index), " has no value (set one of Value's fields)"));
}

myops::v1::Tensor Head(const TensorView& view) {
  myops::v1::Tensor head;
  head.set_dtype(static_cast<myops::v1::DType>(view.dtype));
  for (int64_t d : view.shape) head.add_shape(d);
  return head;
}

// One result as a Value message; its tensors are sent from their memory (slices holding
// their owners). A tensor written to a region (`region`) is sent as its head and the region's
// reference; with `chunked`, a tensor with data as its head and chunked_byte_size, added there.
wire::MessageWriter EncodeValue(const server::Value& v, const CallShm::Result* region,
                                std::vector<TensorView>* chunked) {
  using K = server::Value::Kind;
  wire::MessageWriter out;
  Value small;
  if (region != nullptr && v.kind == K::kTensor) {
    myops::v1::Tensor* head = small.mutable_tensor();
    *head = Head(v.tensor);
    head->mutable_shared_memory()->set_region(region->region);
    head->mutable_shared_memory()->set_offset(region->offset);
    head->mutable_shared_memory()->set_byte_size(static_cast<uint64_t>(v.tensor.bytes));
    out.AppendBytes(small.SerializeAsString());
    return out;
  }
  // Appends tensor `t` as field `field` of `to`.
  auto tensor = [&](int field, const TensorView& t, wire::MessageWriter* to) {
    if (chunked == nullptr || t.bytes == 0) {
      return to->AppendTensor(field, Head(t), TensorSlice(t));
    }
    myops::v1::Tensor head = Head(t);
    head.set_chunked_byte_size(static_cast<uint64_t>(t.bytes));
    wire::MessageWriter inner;
    inner.AppendBytes(head.SerializeAsString());
    to->AppendMessage(field, std::move(inner));
    chunked->push_back(t);
  };
  switch (v.kind) {
    case K::kTensor:
      tensor(Value::kTensorFieldNumber, v.tensor, &out);
      return out;
    case K::kTensorList: {
      wire::MessageWriter list;
      for (const TensorView& t : v.tensor_list) {
        tensor(myops::v1::TensorList::kTensorsFieldNumber, t, &list);
      }
      out.AppendMessage(Value::kTensorListFieldNumber, std::move(list));
      return out;
    }
    case K::kNone:
      small.mutable_none();
      break;
    case K::kInt:
      small.set_int_value(v.int_value);
      break;
    case K::kFloat:
      small.set_float_value(v.float_value);
      break;
    case K::kBool:
      small.set_bool_value(v.bool_value);
      break;
    case K::kString:
      small.set_string_value(v.string_value);
      break;
    case K::kIntList:
      small.mutable_int_list()->mutable_values()->Add(v.int_list.begin(), v.int_list.end());
      break;
    case K::kFloatList:
      small.mutable_float_list()->mutable_values()->Add(v.float_list.begin(), v.float_list.end());
      break;
    case K::kScalarType:
      small.set_scalar_type(static_cast<myops::v1::DType>(v.scalar_type));
      break;
  }
  out.AppendBytes(small.SerializeAsString());
  return out;
}

wire::MessageWriter ResponseWriter(const OpCall& call, const Timing& timing, uint64_t request_id,
                                   const CallShm* shm, std::vector<TensorView>* chunked) {
  wire::MessageWriter out;
  for (size_t r = 0; r < call.results.size(); ++r) {
    const CallShm::Result* region =
        shm == nullptr ? nullptr : ResultRegion(*shm, r, call.results[r]);
    out.AppendMessage(myops::v1::CallResponse::kOutputsFieldNumber,
                      EncodeValue(call.results[r], region, chunked));
  }
  myops::v1::CallResponse rest;
  ToProto(timing, rest.mutable_timing());
  rest.set_request_id(request_id);
  out.AppendBytes(rest.SerializeAsString());
  return out;
}

}  // namespace

int64_t CallParseReservation(uint64_t length, uint64_t head) {
  // Measured: a tensor list of 2-byte empty tensors takes 45 bytes a byte (a Tensor, its
  // slot, the slots outgrown), packed 1-byte varints of a shape 16.
  constexpr uint64_t kHeadFactor = 64;
  return static_cast<int64_t>(2 * length + kHeadFactor * head);
}

absl::Status ParseCallRequest(const grpc::ByteBuffer& bytes, myops::v1::CallRequest* request) {
  if (auto head = wire::CheckCallRequestHead(bytes); !head.ok()) return head.status();
  return ParseCheckedCallRequest(bytes, request);
}

absl::Status ParseCheckedCallRequest(const grpc::ByteBuffer& bytes,
                                     myops::v1::CallRequest* request) {
  grpc::ByteBuffer copy = bytes;  // shares the slices; the reader consumes its own
  grpc::ProtoBufferReader reader(&copy);
  if (!request->ParseFromZeroCopyStream(&reader)) {
    return absl::InvalidArgumentError(
        absl::StrCat("the ", bytes.Length(), " bytes are not a valid myops.v1.CallRequest"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<NamedValue>> DecodeArguments(const myops::v1::CallRequest& request,
                                                        const TensorLimits& limits, CallShm* shm,
                                                        ChunkedTensors* chunks) {
  const Sources from{shm, chunks};
  std::vector<NamedValue> out(static_cast<size_t>(request.arguments_size()));
  for (int i = 0; i < request.arguments_size(); ++i) {
    const myops::v1::Argument& arg = request.arguments(i);
    out[i].name = arg.name();
    if (absl::Status s = Decode(arg, i, limits, from, &out[i].value); !s.ok()) {
      return s;
    }
  }
  return out;
}

grpc::ByteBuffer EncodeCallResponse(const OpCall& call, const Timing& timing, uint64_t request_id,
                                    const CallShm* shm) {
  return ResponseWriter(call, timing, request_id, shm, nullptr).Finish();
}

grpc::ByteBuffer EncodeCallStreamResponse(const OpCall& call, const Timing& timing,
                                          uint64_t request_id, const CallShm* shm,
                                          std::vector<TensorView>* chunked) {
  wire::MessageWriter out;
  myops::v1::CallStreamResponse id;
  id.set_request_id(request_id);
  out.AppendBytes(id.SerializeAsString());
  out.AppendMessage(myops::v1::CallStreamResponse::kResponseFieldNumber,
                    ResponseWriter(call, timing, request_id, shm, chunked));
  return out.Finish();
}

void DescribeOperator(const OpInfo& op, const std::vector<Device>& devices,
                      myops::v1::OperatorInfo* out) {
  out->set_name(op.name);
  out->set_overload(op.overload);
  out->set_schema(op.schema);
  auto describe = [](const ArgInfo& a, auto* info) {
    info->set_name(a.name);
    info->set_type(a.type);
    info->set_kind(a.kind == ArgKind::kOther
                       ? myops::v1::VALUE_KIND_OTHER
                       : static_cast<myops::v1::ValueKind>(static_cast<int>(a.kind) + 1));
  };
  for (const ArgInfo& a : op.args) {
    auto* info = out->add_arguments();
    describe(a, info);
    info->set_optional(a.optional);
    info->set_has_default(a.has_default);
    info->set_default_value(a.default_text);
    info->set_kwarg_only(a.kwarg_only);
  }
  for (const ArgInfo& r : op.returns) describe(r, out->add_returns());
  for (const Device& d : devices) {
    if (d.kind == DeviceKind::kCpu ? op.cpu : op.cuda) out->add_devices(d.Name());
  }
  out->set_served(op.served);
  out->set_reason(op.reason);
}

}  // namespace myops::server
