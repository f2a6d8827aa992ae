// The Open Inference Protocol's request binding (binding.h).
#include "frontends/oip/binding.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"

namespace myops::server::kserve {
namespace {

// Points each input of `request` that names a region at it (InputFromShm), its slice
// kept in `slices`, its copies granted by `reserve` and kept in request->scratch.
absl::Status ReadInputRegions(const std::string& model, const OwnedRegions& shm,
                              const ReserveFn& reserve, InferRequest* request,
                              std::vector<SharedMemorySlice>* slices) {
  for (size_t i = 0; i < request->inputs.size() && i < request->input_shm.size(); ++i) {
    if (request->input_shm[i].empty()) continue;
    InputTensor& in = request->inputs[i];
    const std::string field = InputField(in.name, model);
    auto ref = FindShmRef(request->input_shm[i], field, shm);
    if (!ref.ok()) return ref.status();
    if (!ref->has_value()) continue;
    if (absl::Status s = InputFromShm(shm, **ref, field, reserve, &in, slices, &request->scratch);
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

// The regions of the outputs `selected` whose parameters name one (OutputSlices).
absl::StatusOr<ShmOutputs> OutputRegions(const OpInfo& op, const OwnedRegions& shm,
                                         const InferRequest& request,
                                         const std::vector<OutputRef>& selected) {
  std::vector<std::optional<ShmRef>> refs;
  std::vector<std::string> fields;
  for (size_t i = 0; i < request.output_shm.size() && i < request.outputs.size(); ++i) {
    if (request.output_shm[i].empty()) continue;
    std::string field =
        absl::StrCat("output '", request.outputs[i], "' of model ", op.QualifiedName());
    auto ref = FindShmRef(request.output_shm[i], field, shm);
    if (!ref.ok()) return ref.status();
    if (!ref->has_value()) continue;
    refs.resize(request.outputs.size());
    fields.resize(refs.size());
    refs[i] = *std::move(ref);
    fields[i] = std::move(field);
  }
  if (refs.empty()) return ShmOutputs{};
  return OutputSlices(shm, op, selected, refs, fields);
}

}  // namespace

absl::StatusOr<std::vector<NamedValue>> InferArguments(const OpInfo& op, InferRequest* request) {
  return RequestArguments(op, request->inputs, request->parameters, &request->scratch);
}

absl::Status BindInfer(const OpInfo& op, const OwnedRegions& shm, const ReserveFn& reserve,
                       InferRequest* request, InferCall* call) {
  if (request->model.empty()) request->model = op.QualifiedName();
  const std::string& model = request->model;
  if (absl::Status read = ReadInputRegions(model, shm, reserve, request, &call->shm_inputs);
      !read.ok()) {
    return read;
  }
  auto args = InferArguments(op, request);
  if (!args.ok()) return args.status();
  for (const Parameter& p : request->parameters) {
    auto timeout = TimeoutParameter(op, p);
    if (!timeout.ok()) return timeout.status();
    if (timeout->has_value()) call->timeout_us = **timeout;
  }
  auto selected = SelectOutputs(op, request->outputs);
  if (!selected.ok()) return selected.status();
  auto shm_outputs = OutputRegions(op, shm, *request, *selected);
  if (!shm_outputs.ok()) return shm_outputs.status();
  call->classify.assign(request->outputs.size(), 0);
  for (size_t i = 0; i < request->output_shm.size() && i < request->outputs.size(); ++i) {
    const std::string field =
        absl::StrCat("output '", request->outputs[i], "' of model ", op.QualifiedName());
    auto count = ClassificationCount(request->output_shm[i], field);
    if (!count.ok()) return count.status();
    if (*count > 0 && NamesRegion(request->output_shm[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": classification into shared memory is not supported"));
    }
    call->classify[i] = *count;
  }
  call->op_info = &op;
  call->op = std::move(request->model);
  call->args = std::move(*args);
  call->selected = std::move(*selected);
  call->shm_outputs = std::move(*shm_outputs);
  call->call.result_buffer = ResultBuffer(op, call->selected, call->shm_outputs);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<OutputTensor>> InferOutputs(const InferCall& call) {
  if (absl::Status intact = CheckIntact(call.shm_inputs, call.shm_outputs); !intact.ok()) {
    return intact;
  }
  auto outputs = ResultOutputs(*call.op_info, call.call, call.selected);
  if (!outputs.ok()) return outputs.status();
  for (OutputTensor& o : *outputs) {
    const int64_t count = o.selected < call.classify.size() ? call.classify[o.selected] : 0;
    if (count > 0) {
      if (absl::Status s = Classify(count, &o); !s.ok()) {
        return absl::InvalidArgumentError(absl::StrCat("output '", o.name, "': ", s.message()));
      }
    }
  }
  if (absl::Status written = WriteShmOutputs(call.selected, call.shm_outputs, &*outputs);
      !written.ok()) {
    return written;
  }
  return outputs;
}

}  // namespace myops::server::kserve
