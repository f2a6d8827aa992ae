// Executing Triton's requests on a model instance (instance.h): inputs read in place, the
// Open Inference Protocol's rules for arguments and outputs (frontends/oip/args.h, as
// myops-server applies them), the operator run by the runtime, outputs written into
// Triton's buffers.
#include "instance.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <functional>
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

// The protocol's datatype of a Triton datatype (the same names); null for those it does
// not carry (BYTES, unsigned wider than 8 bits).
const k::Datatype* DatatypeOf(TRITONSERVER_DataType datatype) {
  static const auto* table = [] {
    auto* t = new std::array<const k::Datatype*, TRITONSERVER_TYPE_BF16 + 1>{};
    for (int d = 0; d <= TRITONSERVER_TYPE_BF16; ++d) {
      (*t)[static_cast<size_t>(d)] =
          k::FindDatatype(TRITONSERVER_DataTypeString(static_cast<TRITONSERVER_DataType>(d)));
    }
    return t;
  }();
  const auto d = static_cast<size_t>(datatype);
  return d < table->size() ? (*table)[d] : nullptr;
}

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
  // How messages name the input: made only for a message (requests that succeed make none).
  auto field = [&] { return k::InputField(in.name, model); };
  in.type = DatatypeOf(datatype);
  if (in.type == nullptr) {
    auto type = k::ParseDatatype(TRITONSERVER_DataTypeString(datatype), field());
    return type.status();  // not a datatype this protocol carries: its message
  }
  in.shape.assign(shape, shape + dims);
  int64_t count = 1;
  for (int64_t d : in.shape) {
    // Triton checked the shape against the configuration; this keeps the product exact.
    if (d < 0 || (d > 0 && count > kNoLimits.max_elements / d)) {
      auto counted = k::Elements(in.shape, in.type->size, field(), kNoLimits);
      return counted.ok() ? absl::InvalidArgumentError(field() + ": shape out of range")
                          : counted.status();
    }
    count *= d;
  }
  in.count = count;
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
      return absl::UnimplementedError(absl::StrCat(
          field(), " is in GPU memory: the myops backend reads inputs from CPU memory"));
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
    return absl::InvalidArgumentError(absl::StrCat(field(), ": ", byte_size, " bytes of ",
                                                   in.type->name, " data for shape ",
                                                   k::ShapeString(in.shape)));
  }
  in.data = data;
  if (in.type->family == k::Family::kBool) {  // the only datatype CheckRawData checks bytes of
    if (absl::Status s = k::CheckRawData(
            in, absl::string_view(static_cast<const char*>(data), byte_size), field(), "data");
        !s.ok()) {
      return s;
    }
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

// What a request asks, read from Triton: input tensors (views of Triton's buffers, or
// of `scratch`), parameters, the outputs asked for.
struct RequestData {
  std::vector<k::InputTensor> inputs;
  std::vector<k::Parameter> parameters;
  std::vector<std::string> requested;
  k::Scratch scratch;
  int64_t input_bytes = 0;
};

absl::Status ReadRequest(TRITONBACKEND_Request* request, const std::string& model,
                         RequestData* out) {
  bool cancelled = false;
  if (auto s = TakeTritonError(TRITONBACKEND_RequestIsCancelled(request, &cancelled)); !s.ok()) {
    return s;
  }
  if (cancelled) return absl::CancelledError("the request was cancelled before it ran");
  uint32_t count = 0;
  if (auto s = TakeTritonError(TRITONBACKEND_RequestInputCount(request, &count)); !s.ok()) return s;
  out->inputs.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    auto in = ReadInput(request, i, model, &out->scratch);
    if (!in.ok()) return in.status();
    out->input_bytes += in->count * in->type->size;
    out->inputs.push_back(*std::move(in));
  }
  if (auto s = TakeTritonError(TRITONBACKEND_RequestParameterCount(request, &count)); !s.ok()) {
    return s;
  }
  out->parameters.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    auto p = ReadParameter(request, i);
    if (!p.ok()) return p.status();
    out->parameters.push_back(*std::move(p));
  }
  if (auto s = TakeTritonError(TRITONBACKEND_RequestOutputCount(request, &count)); !s.ok()) {
    return s;
  }
  out->requested.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    const char* name = nullptr;
    if (auto s = TakeTritonError(TRITONBACKEND_RequestOutputName(request, i, &name)); !s.ok()) {
      return s;
    }
    out->requested.emplace_back(name);
  }
  return absl::OkStatus();
}

bool SameParameter(const k::Parameter& a, const k::Parameter& b) {
  return a.name == b.name && a.kind == b.kind && a.bool_value == b.bool_value &&
         a.int64_value == b.int64_value && a.uint64_value == b.uint64_value &&
         (a.double_value == b.double_value ||
          (a.double_value != a.double_value && b.double_value != b.double_value)) &&
         a.string_value == b.string_value;
}

// Whether requests `a` and `b` differ only in their tensors' first dimension and data:
// the same inputs (names, datatypes, the other dimensions) in the same order, the same
// parameters and the same outputs asked for. Each input has a first dimension, the same
// in all of a request's inputs.
bool Batchable(const RequestData& a, const RequestData& b) {
  if (a.inputs.size() != b.inputs.size() || a.requested != b.requested ||
      a.parameters.size() != b.parameters.size()) {
    return false;
  }
  for (size_t i = 0; i < a.inputs.size(); ++i) {
    const k::InputTensor& x = a.inputs[i];
    const k::InputTensor& y = b.inputs[i];
    if (x.name != y.name || x.type != y.type || x.shape.empty() ||
        x.shape.size() != y.shape.size() || x.shape[0] != a.inputs[0].shape[0] ||
        y.shape[0] != b.inputs[0].shape[0] ||
        !std::equal(x.shape.begin() + 1, x.shape.end(), y.shape.begin() + 1)) {
      return false;
    }
  }
  for (size_t i = 0; i < a.parameters.size(); ++i) {
    if (!SameParameter(a.parameters[i], b.parameters[i])) return false;
  }
  return true;
}

}  // namespace

// One request of a batch Triton handed over, on its way to its response.
struct Instance::Pending {
  TRITONBACKEND_Request* request = nullptr;
  TRITONBACKEND_Response* response = nullptr;
  uint64_t exec_start = 0, compute_start = 0, compute_end = 0, exec_end = 0;
  RequestData data;
  absl::Status status;
  bool read = false;      // `data` holds the request
  bool answered = false;  // its outputs are in `response` (or `status` says why not)
  bool batched = false;   // answered by a call that ran several requests
  int64_t batch_size = 1;
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

// Runs one request alone: its arguments bound by the protocol's rules, result 0 (when
// asked for whole) computed straight into its output's buffer where the runtime finds it
// worth it (ops with an out= overload), the other outputs copied into Triton's buffers.
absl::Status Instance::RunOne(Pending& p) {
  const server::OpInfo& op = model_.op_info();
  if (!p.read) {
    if (absl::Status s = ReadRequest(p.request, model_.config().name, &p.data); !s.ok()) return s;
    p.read = true;
  }
  RequestData& data = p.data;
  auto args = k::RequestArguments(op, data.inputs, data.parameters, &data.scratch);
  if (!args.ok()) return args.status();
  server::OpCall call;
  call.op = model_.op();
  call.input_bytes = data.input_bytes;
  if (absl::Status s = server::BindArguments(op, *std::move(args), &call); !s.ok()) return s;
  // Every output, in order (what Triton asks for when the client names none): the
  // model's selection, made once.
  std::vector<k::OutputRef> asked;
  const std::vector<k::OutputRef>* selected = &model_.all_outputs();
  if (data.requested != model_.output_names()) {
    auto s = k::SelectOutputs(op, data.requested);
    if (!s.ok()) return s.status();
    asked = *std::move(s);
    selected = &asked;
  }

  struct InPlace {
    TRITONBACKEND_Response* response = nullptr;
    const std::string* name = nullptr;  // result 0's output
    void* data = nullptr;
    int64_t bytes = 0;
    absl::Status status;
  } in_place{p.response, &model_.output_names()[0]};
  bool result0_whole = false;
  for (const k::OutputRef& ref : *selected) result0_whole |= ref.result == 0 && ref.element < 0;
  if (result0_whole && !op.returns.empty() && op.returns[0].kind == ArgKind::kTensor) {
    // One pointer captured: the std::function holds it without allocating.
    call.result_buffer.allocate = [ip = &in_place](
                                      const server::OpCall::OutputBuffer::Layout& layout,
                                      int64_t bytes) -> void* {
      const k::Datatype* type = k::DatatypeOf(layout.dtype);
      if (type == nullptr) return nullptr;
      auto buffer = NewOutput(ip->response, *ip->name, type->name, layout.shape, bytes);
      if (!buffer.ok()) {
        ip->status = buffer.status();
        return nullptr;
      }
      ip->data = *buffer;
      ip->bytes = bytes;
      return ip->data;
    };
  }

  p.compute_start = NowNs();
  int64_t compute_ns = 0;
  absl::Status ran = runner_->Run(model_.registry(), call, &compute_ns);
  p.compute_end = NowNs();
  if (!ran.ok()) return ran;
  if (!in_place.status.ok()) return in_place.status;
  // Result 0, the one output asked for, computed into its output's buffer: answered.
  if (in_place.data != nullptr && selected->size() == 1 && !call.results.empty() &&
      call.results[0].kind == server::Value::Kind::kTensor &&
      call.results[0].tensor.data == in_place.data) {
    return absl::OkStatus();
  }

  auto outputs = k::ResultOutputs(op, call, *selected);
  if (!outputs.ok()) return outputs.status();
  for (const k::OutputTensor& out : *outputs) {
    const absl::string_view bytes = out.bytes();
    if (in_place.data != nullptr && out.result == 0 && out.element < 0) {
      // Made at the runtime's request; the kernel may still have put the result elsewhere.
      if (out.tensor_data == in_place.data) continue;
      if (static_cast<int64_t>(bytes.size()) != in_place.bytes) {
        return absl::InternalError(
            absl::StrCat(op.QualifiedName(), "'s out= kernel resized its output"));
      }
      std::memcpy(in_place.data, bytes.data(), bytes.size());
      continue;
    }
    auto buffer = NewOutput(p.response, out.name, out.datatype(), out.shape,
                            static_cast<int64_t>(bytes.size()));
    if (!buffer.ok()) return buffer.status();
    if (!bytes.empty()) std::memcpy(*buffer, bytes.data(), bytes.size());
  }
  return absl::OkStatus();
}

// Runs `batch` (requests read already, each Batchable with the first) as one call when
// that is sound (backends/triton/README.md, "Dynamic batching"): the op is pointwise and
// every input is a tensor argument. Their inputs are concatenated along dimension 0 and
// every output, a tensor with that first dimension, is split back. Returns false, having
// answered nothing, when the batch cannot run so (each request then runs alone, and a
// failing call then gives each request its own error).
bool Instance::RunBatch(const std::vector<Pending*>& batch) {
  const server::OpInfo& op = model_.op_info();
  if (!op.pointwise || batch.size() < 2) return false;
  RequestData merged;
  merged.parameters = batch[0]->data.parameters;
  merged.requested = batch[0]->data.requested;
  int64_t rows = 0;
  for (Pending* p : batch) rows += p->data.inputs[0].shape[0];
  for (size_t i = 0; i < batch[0]->data.inputs.size(); ++i) {
    const k::InputTensor& first = batch[0]->data.inputs[i];
    const auto arg = std::find_if(op.args.begin(), op.args.end(),
                                  [&](const server::ArgInfo& a) { return a.name == first.name; });
    if (arg == op.args.end() || arg->kind != ArgKind::kTensor) return false;
    k::InputTensor in = first;
    in.shape[0] = rows;
    in.count = 0;
    int64_t bytes = 0;
    for (Pending* p : batch) bytes += p->data.inputs[i].count * first.type->size;
    merged.scratch.push_back(std::make_unique<char[]>(static_cast<size_t>(bytes)));
    char* to = merged.scratch.back().get();
    for (Pending* p : batch) {
      const k::InputTensor& part = p->data.inputs[i];
      const int64_t n = part.count * first.type->size;
      if (n > 0) std::memcpy(to, part.data, static_cast<size_t>(n));
      to += n;
      in.count += part.count;
    }
    in.data = merged.scratch.back().get();
    merged.input_bytes += bytes;
    merged.inputs.push_back(std::move(in));
  }
  auto args = k::RequestArguments(op, merged.inputs, merged.parameters, &merged.scratch);
  if (!args.ok()) return false;
  server::OpCall call;
  call.op = model_.op();
  call.input_bytes = merged.input_bytes;
  if (!server::BindArguments(op, *std::move(args), &call).ok()) return false;
  auto selected = k::SelectOutputs(op, merged.requested);
  if (!selected.ok()) return false;
  const uint64_t compute_start = NowNs();
  int64_t compute_ns = 0;
  if (!runner_->Run(model_.registry(), call, &compute_ns).ok()) return false;
  const uint64_t compute_end = NowNs();
  auto outputs = k::ResultOutputs(op, call, *selected);
  if (!outputs.ok()) return false;
  for (const k::OutputTensor& out : *outputs) {
    if (!out.is_tensor || out.shape.empty() || out.shape[0] != rows) return false;
  }
  // Every output splits back: answer each request with its rows.
  int64_t first_row = 0;
  for (Pending* p : batch) {
    const int64_t n = p->data.inputs[0].shape[0];
    for (const k::OutputTensor& out : *outputs) {
      const int64_t row_bytes = rows == 0 ? 0 : out.tensor_bytes / rows;
      std::vector<int64_t> shape = out.shape;
      shape[0] = n;
      auto buffer = NewOutput(p->response, out.name, out.datatype(), shape, n * row_bytes);
      if (!buffer.ok()) {
        p->status = buffer.status();
        break;
      }
      if (n * row_bytes > 0) {
        std::memcpy(*buffer, static_cast<const char*>(out.tensor_data) + first_row * row_bytes,
                    static_cast<size_t>(n * row_bytes));
      }
    }
    first_row += n;
    p->batch_size = n;
    p->compute_start = compute_start;
    p->compute_end = compute_end;
    p->answered = true;
    p->batched = true;
  }
  return true;
}

void Instance::Execute(TRITONBACKEND_Request** requests, uint32_t count) {
  std::vector<Pending> pending;
  pending.reserve(count);
  for (uint32_t r = 0; r < count; ++r) {
    Pending p;
    p.request = requests[r];
    p.exec_start = NowNs();
    absl::Status made = TakeTritonError(TRITONBACKEND_ResponseNew(&p.response, p.request));
    if (!made.ok()) {
      // No response can reach the client; Triton answers a request released without one.
      Log(TRITONSERVER_LOG_ERROR, absl::StrCat("myops: no response for a request of '",
                                               model_.config().name, "': ", made.message()));
      TakeTritonError(TRITONBACKEND_RequestRelease(p.request, TRITONSERVER_REQUEST_RELEASE_ALL))
          .IgnoreError();
      continue;
    }
    pending.push_back(std::move(p));
  }
  // The one place where this boundary stops exceptions (allocation failures): each
  // request still gets its own answer.
  auto guarded = [](auto&& body) -> absl::Status {
    try {
      return body();
    } catch (const std::bad_alloc&) {
      return absl::ResourceExhaustedError("out of memory while answering the request");
    } catch (const std::exception& e) {
      return absl::InternalError(e.what());
    }
  };
  // Dynamic batching: the requests that agree (Batchable) run as one call per group.
  std::vector<std::vector<Pending*>> groups;
  if (model_.config().max_batch_size > 0 && model_.op_info().pointwise && pending.size() > 1) {
    for (Pending& p : pending) {
      p.status = guarded([&] { return ReadRequest(p.request, model_.config().name, &p.data); });
      p.read = true;
      if (!p.status.ok()) continue;
      auto group = std::find_if(groups.begin(), groups.end(), [&](const std::vector<Pending*>& g) {
        return Batchable(g.front()->data, p.data);
      });
      if (group == groups.end()) {
        groups.push_back({&p});
      } else {
        group->push_back(&p);
      }
    }
    for (std::vector<Pending*>& group : groups) {
      if (group.size() < 2) continue;
      bool ran = false;
      absl::Status s = guarded([&] {
        ran = RunBatch(group);
        return absl::OkStatus();
      });
      if (!s.ok() || !ran) {
        for (Pending* p : group) p->answered = p->batched = false;  // each runs alone below
      }
    }
  }
  for (Pending& p : pending) {
    if (!p.answered) {
      // A request whose reading failed has that as its answer.
      if (!p.read || p.status.ok()) p.status = guarded([&] { return RunOne(p); });
      if (model_.config().max_batch_size > 0 && p.read && !p.data.inputs.empty() &&
          !p.data.inputs[0].shape.empty()) {
        p.batch_size = p.data.inputs[0].shape[0];
      }
    }
    if (p.compute_start == 0) p.compute_start = p.compute_end = NowNs();
    TRITONSERVER_Error* error = ToTritonError(p.status);
    absl::Status sent = TakeTritonError(
        TRITONBACKEND_ResponseSend(p.response, TRITONSERVER_RESPONSE_COMPLETE_FINAL, error));
    if (error != nullptr) TRITONSERVER_ErrorDelete(error);
    p.exec_end = NowNs();
    if (!sent.ok()) {
      Log(TRITONSERVER_LOG_ERROR, absl::StrCat("myops: sending a response of '",
                                               model_.config().name, "': ", sent.message()));
    }
    TakeTritonError(TRITONBACKEND_ModelInstanceReportStatistics(triton_, p.request, p.status.ok(),
                                                                p.exec_start, p.compute_start,
                                                                p.compute_end, p.exec_end))
        .IgnoreError();
    if (p.status.ok() && !p.batched) {
      TakeTritonError(TRITONBACKEND_ModelInstanceReportBatchStatistics(
                          triton_, static_cast<uint64_t>(p.batch_size), p.exec_start,
                          p.compute_start, p.compute_end, p.exec_end))
          .IgnoreError();
    }
    TakeTritonError(TRITONBACKEND_RequestRelease(p.request, TRITONSERVER_REQUEST_RELEASE_ALL))
        .IgnoreError();
  }
  // One batch statistic per call that ran several requests: the rows it computed.
  for (const std::vector<Pending*>& group : groups) {
    if (group.size() < 2 || !group.front()->batched) continue;
    uint64_t rows = 0;
    for (const Pending* p : group) rows += static_cast<uint64_t>(p->batch_size);
    TakeTritonError(TRITONBACKEND_ModelInstanceReportBatchStatistics(
                        triton_, rows, group.front()->exec_start, group.front()->compute_start,
                        group.front()->compute_end, group.back()->exec_end))
        .IgnoreError();
  }
}

}  // namespace myops::triton
