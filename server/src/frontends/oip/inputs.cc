// The gRPC binding's request side: a ModelInferRequest as the protocol-neutral
// InferRequest that frontends/oip/binding.h binds to its model (see codec.h for the
// mapping, args.h for the rules shared with the HTTP/REST binding).
#include <algorithm>
#include <limits>

#include "absl/strings/string_view.h"

#include "absl/strings/str_cat.h"
#include "frontends/oip/codec.h"

namespace myops::server::kserve {
namespace {

using inference::ModelInferRequest;

// Input `i`'s name, datatype, shape and element count, checked against `limits`.
absl::StatusOr<InputTensor> InputHead(const ModelInferRequest& request, int i,
                                      const std::string& field, const TensorLimits& limits) {
  const ModelInferRequest::InferInputTensor& in = request.inputs(i);
  InputTensor e;
  e.name = in.name();
  e.shape.assign(in.shape().begin(), in.shape().end());
  auto type = ParseDatatype(in.datatype(), field);
  if (!type.ok()) return type.status();
  e.type = *type;
  auto numel = Elements(e.shape, e.type->size, field, limits);
  if (!numel.ok()) return numel.status();
  e.count = *numel;
  return e;
}

// Raw contents value `k` as the data of `e` (type and count set): copied once out of the
// received slices into `scratch` (aligned for any element size; within what the parse
// reserved), so that the slices (gRPC's read buffers, which a small request may share with
// others) go when decoding ends, and kernels get aligned elements.
absl::Status RawData(const wire::DataFieldValues& raw, size_t k, const std::string& field,
                     InputTensor* e, Scratch* scratch) {
  const size_t n = raw.size(k);
  if (absl::Status s = CheckRawSize(*e, n, field, "raw contents"); !s.ok()) return s;
  char* copy = scratch->emplace_back(new char[std::max<size_t>(n, 1)]).get();
  raw.CopyTo(k, copy);
  if (absl::Status s = CheckRawData(*e, absl::string_view(copy, n), field, "raw contents");
      !s.ok()) {
    return s;
  }
  e->data = copy;
  e->stride = e->type->size;
  return absl::OkStatus();
}

// Input `i` with its data (raw contents value `raw`, or typed contents), checked against
// its shape. `raw_inputs`: how many inputs carry bytes (not shared memory): each has one
// raw_input_contents value in `raw_values`, in order, when the request has any.
absl::StatusOr<InputTensor> InputData(const ModelInferRequest& request,
                                      const wire::DataFieldValues& raw_values, int i, int raw,
                                      int raw_inputs, const std::string& field,
                                      const TensorLimits& limits, Scratch* scratch) {
  const ModelInferRequest::InferInputTensor& in = request.inputs(i);
  auto head = InputHead(request, i, field, limits);
  if (!head.ok()) return head.status();
  InputTensor e = *std::move(head);
  if (raw_values.count() > 0) {
    if (in.has_contents()) {
      return absl::InvalidArgumentError(absl::StrCat(
          field,
          " has typed contents in a request with raw_input_contents (use one or the other)"));
    }
    if (raw_values.count() != static_cast<size_t>(raw_inputs)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the request has ", raw_values.count(), " raw_input_contents for ", raw_inputs,
          " inputs not in shared memory (one per such input, in the order of "
          "inputs)"));
    }
    if (absl::Status s = RawData(raw_values, static_cast<size_t>(raw), field, &e, scratch);
        !s.ok()) {
      return s;
    }
    return e;
  }
  const inference::InferTensorContents& c = in.contents();
  int64_t have = 0;
  const char* where = "";
  switch (e.type->family) {
    case Family::kBool:
      have = c.bool_contents_size(), e.data = c.bool_contents().data(), e.stride = 1;
      where = "bool_contents";
      break;
    case Family::kSigned:
      if (e.type->size == 8) {
        have = c.int64_contents_size(), e.data = c.int64_contents().data(), e.stride = 8;
        where = "int64_contents";
      } else {
        have = c.int_contents_size(), e.data = c.int_contents().data(), e.stride = 4;
        where = "int_contents";
      }
      break;
    case Family::kUnsigned:
      have = c.uint_contents_size(), e.data = c.uint_contents().data(), e.stride = 4;
      where = "uint_contents";
      break;
    case Family::kFloat:
      if (e.type->size == 4) {
        have = c.fp32_contents_size(), e.data = c.fp32_contents().data(), e.stride = 4;
        where = "fp32_contents";
      } else {
        have = c.fp64_contents_size(), e.data = c.fp64_contents().data(), e.stride = 8;
        where = "fp64_contents";
      }
      break;
    case Family::kHalf:
      return absl::InvalidArgumentError(
          absl::StrCat(field, " is ", e.type->name, ", which travels only as raw_input_contents"));
  }
  if (have != e.count) {
    return absl::InvalidArgumentError(absl::StrCat(field, " has ", have, " elements in ", where,
                                                   " but shape ", ShapeString(e.shape), " needs ",
                                                   e.count));
  }
  return e;
}

// The protocol-neutral form of parameter `p`.
Parameter ToParameter(const std::string& name, const inference::InferParameter& p) {
  using P = inference::InferParameter;
  Parameter out;
  out.name = name;
  switch (p.parameter_choice_case()) {
    case P::kBoolParam:
      out.kind = Parameter::Kind::kBool, out.bool_value = p.bool_param();
      break;
    case P::kInt64Param:
      out.kind = Parameter::Kind::kInt64, out.int64_value = p.int64_param();
      break;
    case P::kUint64Param:
      out.kind = Parameter::Kind::kUint64, out.uint64_value = p.uint64_param();
      break;
    case P::kDoubleParam:
      out.kind = Parameter::Kind::kDouble, out.double_value = p.double_param();
      break;
    case P::kStringParam:
      out.kind = Parameter::Kind::kString, out.string_value = p.string_param();
      break;
    case P::PARAMETER_CHOICE_NOT_SET:
      break;
  }
  return out;
}

// The protocol-neutral form of parameters `params`.
std::vector<Parameter> ToParameters(
    const google::protobuf::Map<std::string, inference::InferParameter>& params) {
  std::vector<Parameter> out;
  out.reserve(params.size());
  for (const auto& [name, p] : params) out.push_back(ToParameter(name, p));
  return out;
}

}  // namespace

absl::Status ParseInferRequest(const grpc::ByteBuffer& bytes, inference::ModelInferRequest* out,
                               wire::DataFieldValues* raw) {
  return wire::ParseWithDataField(bytes, ModelInferRequest::kRawInputContentsFieldNumber, out, raw);
}

int64_t InferParseReservation(uint64_t length, const wire::InferRequestBytes& size) {
  // Measured, parsed and decoded: 4-byte inputs with an empty parameter map take 177
  // bytes each byte (an InferInputTensor, its map, their decoded InputTensor and
  // parameter list, the slots outgrown); packed arrays up to 3.75 times their final bytes
  // (fp32 and fp64 grow chunk by chunk as the stream's slices come).
  constexpr uint64_t kHeadFactor = 192;
  constexpr uint64_t kPackedFactor = 4;
  return static_cast<int64_t>(2 * length + kHeadFactor * size.head +
                              kPackedFactor * size.packed_arrays);
}

absl::Status DecodeInferRequest(const ModelInferRequest& request,
                                const wire::DataFieldValues& raw_values, std::string model,
                                const TensorLimits& limits, InferRequest* out) {
  out->model = std::move(model);
  // Which inputs are in shared memory (most requests: none, and no parameters).
  const auto n = static_cast<size_t>(request.inputs_size());
  std::vector<bool> in_region;
  int raw_inputs = request.inputs_size();
  for (int i = 0; i < request.inputs_size(); ++i) {
    if (request.inputs(i).parameters().empty()) continue;
    out->input_shm.resize(n);
    in_region.resize(n);
    std::vector<Parameter>& params = out->input_shm[static_cast<size_t>(i)];
    params = ToParameters(request.inputs(i).parameters());
    // Checked once, by BindInfer; here only: its bytes are not among raw_input_contents.
    if (NamesRegion(params)) {
      --raw_inputs;
      in_region[static_cast<size_t>(i)] = true;
    }
  }
  out->inputs.reserve(n);
  int raw = 0;
  for (int i = 0; i < request.inputs_size(); ++i) {
    const std::string field = InputField(request.inputs(i).name(), out->model);
    absl::StatusOr<InputTensor> in;
    if (!in_region.empty() && in_region[static_cast<size_t>(i)]) {
      // The region bounds its bytes; its elements are limited as any tensor's.
      in = InputHead(request, i, field, limits.InRegion());
      if (in.ok() && request.inputs(i).has_contents()) {
        in = absl::InvalidArgumentError(
            absl::StrCat(field, " has both contents and a shared memory region"));
      }
    } else {
      in = InputData(request, raw_values, i, raw++, raw_inputs, field, limits, &out->scratch);
    }
    if (!in.ok()) return in.status();
    out->inputs.push_back(*std::move(in));
  }
  out->parameters.reserve(request.parameters().size());
  for (const auto& [name, parameter] : request.parameters()) {
    out->parameters.push_back(ToParameter(name, parameter));
  }
  out->outputs.reserve(static_cast<size_t>(request.outputs_size()));
  for (int i = 0; i < request.outputs_size(); ++i) {
    const auto& wanted = request.outputs(i);
    out->outputs.push_back(wanted.name());
    if (wanted.parameters().empty()) continue;
    out->output_shm.resize(static_cast<size_t>(request.outputs_size()));
    out->output_shm[static_cast<size_t>(i)] = ToParameters(wanted.parameters());
  }
  return absl::OkStatus();
}

}  // namespace myops::server::kserve
