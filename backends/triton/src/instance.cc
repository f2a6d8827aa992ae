// Executing Triton's requests on a model instance (instance.h): inputs read in place, the
// Open Inference Protocol's rules for arguments and outputs (frontends/oip/args.h, as
// myops-server applies them), the operator run by the runtime, outputs written into
// Triton's buffers.
#include "instance.h"

#include <chrono>
#include <cstring>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "errors.h"
#include "frontends/oip/args.h"
#include "frontends/oip/datatypes.h"

namespace myops::triton {
namespace {

namespace k = server::kserve;
using server::ArgKind;

uint64_t NowNs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

// Triton checks shapes and byte sizes against the configuration; these limits only keep
// the element arithmetic exact.
constexpr server::TensorLimits kNoLimits{std::numeric_limits<int64_t>::max() / 16,
                                         std::numeric_limits<int64_t>::max() / 16, 64};

// Input `index` of `request` as an input tensor: its one CPU buffer in place, or its
// buffers gathered into `scratch`.
absl::StatusOr<k::InputTensor> ReadInput(TRITONBACKEND_Request* request, uint32_t index,
                                         const std::string& model, k::Scratch* scratch) {
  TRITONBACKEND_Input* input = nullptr;
  if (auto s = TakeTritonError(TRITONBACKEND_RequestInputByIndex(request, index, &input));
      !s.ok()) {
    return s;
  }
  const char* name = nullptr;
  TRITONSERVER_DataType datatype = TRITONSERVER_TYPE_INVALID;
  const int64_t* shape = nullptr;
  uint32_t dims = 0;
  uint64_t byte_size = 0;
  uint32_t buffers = 0;
  if (auto s = TakeTritonError(TRITONBACKEND_InputProperties(input, &name, &datatype, &shape, &dims,
                                                             &byte_size, &buffers));
      !s.ok()) {
    return s;
  }
  k::InputTensor in;
  in.name = name;
  const std::string field = k::InputField(in.name, model);
  auto type = k::ParseDatatype(TRITONSERVER_DataTypeString(datatype), field);
  if (!type.ok()) return type.status();
  in.type = *type;
  in.shape.assign(shape, shape + dims);
  auto count = k::Elements(in.shape, in.type->size, field, kNoLimits);
  if (!count.ok()) return count.status();
  in.count = *count;
  in.stride = in.type->size;
  // One CPU buffer: read in place. Several (Triton's gather of a request split over
  // buffers): copied into one.
  const void* data = nullptr;
  char* gathered = nullptr;
  uint64_t offset = 0;
  for (uint32_t b = 0; b < buffers; ++b) {
    const void* buffer = nullptr;
    uint64_t size = 0;
    TRITONSERVER_MemoryType memory = TRITONSERVER_MEMORY_CPU;
    int64_t memory_id = 0;
    if (auto s = TakeTritonError(
            TRITONBACKEND_InputBuffer(input, b, &buffer, &size, &memory, &memory_id));
        !s.ok()) {
      return s;
    }
    if (memory == TRITONSERVER_MEMORY_GPU) {
      return absl::UnimplementedError(
          absl::StrCat(field, " is in GPU memory: the myops backend reads inputs from CPU memory"));
    }
    if (buffers == 1) {
      data = buffer;
      offset = size;
      break;
    }
    if (gathered == nullptr) {
      scratch->push_back(std::make_unique<char[]>(byte_size));
      gathered = scratch->back().get();
      data = gathered;
    }
    if (size > byte_size - offset) break;  // more than the properties said: refused below
    std::memcpy(gathered + offset, buffer, size);
    offset += size;
  }
  if (offset != byte_size ||
      static_cast<uint64_t>(in.count) * static_cast<uint64_t>(in.type->size) != byte_size) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": ", byte_size, " bytes of ",
                                                   in.type->name, " data for shape ",
                                                   k::ShapeString(in.shape)));
  }
  in.data = data;
  if (absl::Status s = k::CheckRawData(
          in, absl::string_view(static_cast<const char*>(data), byte_size), field, "data");
      !s.ok()) {
    return s;
  }
  return in;
}

// Request parameter `index` as the protocol's parameter.
absl::StatusOr<k::Parameter> ReadParameter(TRITONBACKEND_Request* request, uint32_t index) {
  const char* key = nullptr;
  TRITONSERVER_ParameterType type = TRITONSERVER_PARAMETER_STRING;
  const void* value = nullptr;
  if (auto s = TakeTritonError(TRITONBACKEND_RequestParameter(request, index, &key, &type, &value));
      !s.ok()) {
    return s;
  }
  k::Parameter p;
  p.name = key;
  switch (type) {
    case TRITONSERVER_PARAMETER_STRING:
      p.kind = k::Parameter::Kind::kString;
      p.string_value = static_cast<const char*>(value);
      break;
    case TRITONSERVER_PARAMETER_INT:
      p.kind = k::Parameter::Kind::kInt64;
      p.int64_value = *static_cast<const int64_t*>(value);
      break;
    case TRITONSERVER_PARAMETER_BOOL:
      p.kind = k::Parameter::Kind::kBool;
      p.bool_value = *static_cast<const bool*>(value);
      break;
    case TRITONSERVER_PARAMETER_DOUBLE:
      p.kind = k::Parameter::Kind::kDouble;
      p.double_value = *static_cast<const double*>(value);
      break;
    default:
      p.kind = k::Parameter::Kind::kOther;
      p.other = "bytes";
      break;
  }
  return p;
}

// A response output `name` of `datatype` and `shape`, and its CPU buffer of `bytes`.
absl::StatusOr<void*> NewOutput(TRITONBACKEND_Response* response, const std::string& name,
                                const char* datatype, const std::vector<int64_t>& shape,
                                int64_t bytes) {
  TRITONBACKEND_Output* output = nullptr;
  if (auto s = TakeTritonError(TRITONBACKEND_ResponseOutput(
          response, &output, name.c_str(), TRITONSERVER_StringToDataType(datatype), shape.data(),
          static_cast<uint32_t>(shape.size())));
      !s.ok()) {
    return s;
  }
  void* buffer = nullptr;
  TRITONSERVER_MemoryType memory = TRITONSERVER_MEMORY_CPU;
  int64_t memory_id = 0;
  if (auto s = TakeTritonError(TRITONBACKEND_OutputBuffer(
          output, &buffer, static_cast<uint64_t>(bytes), &memory, &memory_id));
      !s.ok()) {
    return s;
  }
  if (memory == TRITONSERVER_MEMORY_GPU) {
    return absl::UnimplementedError(absl::StrCat(
        "output '", name, "': Triton gave GPU memory; the myops backend writes CPU memory"));
  }
  return buffer;
}

}  // namespace

struct Instance::Times {
  uint64_t compute_start = 0;
  uint64_t compute_end = 0;
};

absl::StatusOr<std::unique_ptr<Instance>> Instance::Create(TRITONBACKEND_ModelInstance* instance,
                                                           const Model& model) {
  TRITONSERVER_InstanceGroupKind kind = TRITONSERVER_INSTANCEGROUPKIND_CPU;
  if (auto s = TakeTritonError(TRITONBACKEND_ModelInstanceKind(instance, &kind)); !s.ok()) return s;
  server::Device device;
  if (kind == TRITONSERVER_INSTANCEGROUPKIND_GPU) {
    int32_t id = 0;
    if (auto s = TakeTritonError(TRITONBACKEND_ModelInstanceDeviceId(instance, &id)); !s.ok()) {
      return s;
    }
    device = server::Device{server::DeviceKind::kCuda, id};
  }
  auto runner = server::CallRunner::Create(device);
  if (!runner.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("model '", model.config().name, "': ", runner.status().message()));
  }
  return std::unique_ptr<Instance>(new Instance(instance, model, *std::move(runner)));
}

absl::Status Instance::Run(TRITONBACKEND_Request* request, TRITONBACKEND_Response* response,
                           Times* times) {
  const server::OpInfo& op = model_.op_info();
  const std::string& model = model_.config().name;
  bool cancelled = false;
  if (auto s = TakeTritonError(TRITONBACKEND_RequestIsCancelled(request, &cancelled)); !s.ok()) {
    return s;
  }
  if (cancelled) return absl::CancelledError("the request was cancelled before it ran");

  k::Scratch scratch;
  std::vector<k::InputTensor> inputs;
  uint32_t count = 0;
  if (auto s = TakeTritonError(TRITONBACKEND_RequestInputCount(request, &count)); !s.ok()) return s;
  int64_t input_bytes = 0;
  for (uint32_t i = 0; i < count; ++i) {
    auto in = ReadInput(request, i, model, &scratch);
    if (!in.ok()) return in.status();
    input_bytes += in->count * in->type->size;
    inputs.push_back(*std::move(in));
  }
  std::vector<k::Parameter> parameters;
  if (auto s = TakeTritonError(TRITONBACKEND_RequestParameterCount(request, &count)); !s.ok()) {
    return s;
  }
  for (uint32_t i = 0; i < count; ++i) {
    auto p = ReadParameter(request, i);
    if (!p.ok()) return p.status();
    parameters.push_back(*std::move(p));
  }
  std::vector<std::string> requested;
  if (auto s = TakeTritonError(TRITONBACKEND_RequestOutputCount(request, &count)); !s.ok()) {
    return s;
  }
  for (uint32_t i = 0; i < count; ++i) {
    const char* name = nullptr;
    if (auto s = TakeTritonError(TRITONBACKEND_RequestOutputName(request, i, &name)); !s.ok()) {
      return s;
    }
    requested.emplace_back(name);
  }

  auto args = k::RequestArguments(op, inputs, parameters, &scratch);
  if (!args.ok()) return args.status();
  server::OpCall call;
  call.op = model_.op();
  call.input_bytes = input_bytes;
  if (absl::Status s = server::BindArguments(op, *std::move(args), &call); !s.ok()) return s;
  auto selected = k::SelectOutputs(op, requested);
  if (!selected.ok()) return selected.status();

  // Result 0, when asked for whole, computed straight into its output's buffer (ops with
  // an out= overload; the runtime decides whether it is worth it).
  const std::vector<std::string> names = k::OutputNames(op);
  struct InPlace {
    void* data = nullptr;
    int64_t bytes = 0;
    absl::Status status;
  } in_place;
  bool result0_whole = false;
  for (const k::OutputRef& ref : *selected) {
    result0_whole |= ref.result == 0 && ref.element < 0;
  }
  if (result0_whole && !op.returns.empty() && op.returns[0].kind == ArgKind::kTensor) {
    call.result_buffer.allocate = [&](const server::OpCall::OutputBuffer::Layout& layout,
                                      int64_t bytes) -> void* {
      const k::Datatype* type = k::DatatypeOf(layout.dtype);
      if (type == nullptr) return nullptr;
      auto buffer = NewOutput(response, names[0], type->name, layout.shape, bytes);
      if (!buffer.ok()) {
        in_place.status = buffer.status();
        return nullptr;
      }
      in_place.data = *buffer;
      in_place.bytes = bytes;
      return in_place.data;
    };
  }

  times->compute_start = NowNs();
  int64_t compute_ns = 0;
  absl::Status ran = runner_->Run(model_.registry(), call, &compute_ns);
  times->compute_end = NowNs();
  if (!ran.ok()) return ran;
  if (!in_place.status.ok()) return in_place.status;

  auto outputs = k::ResultOutputs(op, call, *selected);
  if (!outputs.ok()) return outputs.status();
  for (const k::OutputTensor& out : *outputs) {
    const absl::string_view bytes = out.bytes();
    if (in_place.data != nullptr && out.result == 0 && out.element < 0) {
      // Made by the runtime's request; the kernel may still have put the result elsewhere.
      if (out.tensor_data == in_place.data) continue;
      if (static_cast<int64_t>(bytes.size()) != in_place.bytes) {
        return absl::InternalError(
            absl::StrCat(op.QualifiedName(), "'s out= kernel resized its output"));
      }
      std::memcpy(in_place.data, bytes.data(), bytes.size());
      continue;
    }
    auto buffer = NewOutput(response, out.name, out.datatype(), out.shape,
                            static_cast<int64_t>(bytes.size()));
    if (!buffer.ok()) return buffer.status();
    if (!bytes.empty()) std::memcpy(*buffer, bytes.data(), bytes.size());
  }
  return absl::OkStatus();
}

void Instance::Execute(TRITONBACKEND_Request** requests, uint32_t count) {
  for (uint32_t r = 0; r < count; ++r) {
    TRITONBACKEND_Request* request = requests[r];
    const uint64_t exec_start = NowNs();
    TRITONBACKEND_Response* response = nullptr;
    absl::Status status = TakeTritonError(TRITONBACKEND_ResponseNew(&response, request));
    if (!status.ok()) {
      // No response can reach the client; Triton answers a request released without one.
      Log(TRITONSERVER_LOG_ERROR, absl::StrCat("myops: no response for a request of '",
                                               model_.config().name, "': ", status.message()));
      TakeTritonError(TRITONBACKEND_RequestRelease(request, TRITONSERVER_REQUEST_RELEASE_ALL))
          .IgnoreError();
      continue;
    }
    Times times;
    try {
      status = Run(request, response, &times);
    } catch (const std::bad_alloc&) {
      status = absl::ResourceExhaustedError("out of memory while answering the request");
    } catch (const std::exception& e) {
      status = absl::InternalError(e.what());
    }
    if (times.compute_start == 0) times.compute_start = times.compute_end = NowNs();
    TRITONSERVER_Error* error = ToTritonError(status);
    absl::Status sent = TakeTritonError(
        TRITONBACKEND_ResponseSend(response, TRITONSERVER_RESPONSE_COMPLETE_FINAL, error));
    if (error != nullptr) TRITONSERVER_ErrorDelete(error);
    const uint64_t exec_end = NowNs();
    if (!sent.ok()) {
      Log(TRITONSERVER_LOG_ERROR, absl::StrCat("myops: sending a response of '",
                                               model_.config().name, "': ", sent.message()));
    }
    TakeTritonError(TRITONBACKEND_ModelInstanceReportStatistics(triton_, request, status.ok(),
                                                                exec_start, times.compute_start,
                                                                times.compute_end, exec_end))
        .IgnoreError();
    if (status.ok()) {
      TakeTritonError(TRITONBACKEND_ModelInstanceReportBatchStatistics(
                          triton_, 1, exec_start, times.compute_start, times.compute_end, exec_end))
          .IgnoreError();
    }
    TakeTritonError(TRITONBACKEND_RequestRelease(request, TRITONSERVER_REQUEST_RELEASE_ALL))
        .IgnoreError();
  }
}

}  // namespace myops::triton
