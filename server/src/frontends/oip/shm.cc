// Shared memory inputs and outputs of the Open Inference Protocol front ends (see
// frontends/oip/shm.h).
#include "frontends/oip/shm.h"

#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"

namespace myops::server::kserve {
namespace {

constexpr char kRegion[] = "shared_memory_region";
constexpr char kOffset[] = "shared_memory_offset";
constexpr char kByteSize[] = "shared_memory_byte_size";

// The unsigned value of integer parameter `p`; INVALID_ARGUMENT naming `field` otherwise.
absl::StatusOr<uint64_t> Unsigned(const Parameter& p, const std::string& field) {
  switch (p.kind) {
    case Parameter::Kind::kUint64:
      return p.uint64_value;
    case Parameter::Kind::kInt64:
      if (p.int64_value >= 0) return static_cast<uint64_t>(p.int64_value);
      return absl::InvalidArgumentError(
          absl::StrCat(field, " has ", p.name, " ", p.int64_value, " (must be >= 0)"));
    default:
      return absl::InvalidArgumentError(
          absl::StrCat(field, " has parameter ", p.name, " that is not an integer"));
  }
}

}  // namespace

bool NamesRegion(const std::vector<Parameter>& params) {
  for (const Parameter& p : params) {
    if (p.name == kRegion || p.name == kOffset || p.name == kByteSize) return true;
  }
  return false;
}

absl::StatusOr<std::optional<ShmRef>> FindShmRef(const std::vector<Parameter>& params,
                                                 const std::string& field,
                                                 const OwnedRegions& shm) {
  const Parameter* region = nullptr;
  const Parameter* offset = nullptr;
  const Parameter* byte_size = nullptr;
  for (const Parameter& p : params) {
    if (p.name == kRegion) region = &p;
    if (p.name == kOffset) offset = &p;
    if (p.name == kByteSize) byte_size = &p;
  }
  if (region == nullptr && offset == nullptr && byte_size == nullptr) return std::nullopt;
  if (!shm) {
    return absl::UnimplementedError(
        absl::StrCat(field,
                     " names a shared memory region, but this server does not accept shared "
                     "memory (start it with --allow-shared-memory)"));
  }
  if (region == nullptr || byte_size == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(field, " needs both ", kRegion, " and ",
                                                   kByteSize, " (and optionally ", kOffset, ")"));
  }
  if (region->kind != Parameter::Kind::kString) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " has ", kRegion, " that is not a string"));
  }
  ShmRef ref;
  ref.region = region->string_value;
  auto size = Unsigned(*byte_size, field);
  if (!size.ok()) return size.status();
  ref.byte_size = *size;
  if (offset != nullptr) {
    auto at = Unsigned(*offset, field);
    if (!at.ok()) return at.status();
    ref.offset = *at;
  }
  return ref;
}

absl::Status InputFromShm(const OwnedRegions& shm, const ShmRef& ref, const std::string& field,
                          const ReserveFn& reserve, InputTensor* in,
                          std::vector<SharedMemorySlice>* slices, Scratch* scratch) {
  const auto need = static_cast<uint64_t>(in->count) * static_cast<uint64_t>(in->type->size);
  if (ref.byte_size != need) {
    return absl::InvalidArgumentError(absl::StrCat(field, " has ", kByteSize, " ", ref.byte_size,
                                                   " but shape ", ShapeString(in->shape), " of ",
                                                   in->type->name, " needs ", need, " bytes"));
  }
  const bool floating = in->type->family == Family::kFloat || in->type->family == Family::kHalf;
  auto data = RegionBytes(shm, ref, floating, in->type->size, field, reserve, slices, scratch);
  if (!data.ok()) return data.status();
  in->data = *data;
  in->stride = in->type->size;
  if (floating) return absl::OkStatus();
  return CheckRawData(*in, absl::string_view(*data, static_cast<size_t>(need)), field,
                      "shared memory");
}

absl::StatusOr<ShmOutputs> OutputSlices(const OwnedRegions& shm, const OpInfo& op,
                                        const std::vector<OutputRef>& selected,
                                        const std::vector<std::optional<ShmRef>>& refs,
                                        const std::vector<std::string>& fields) {
  ShmOutputs out;
  for (size_t i = 0; i < refs.size() && i < selected.size(); ++i) {
    if (!refs[i].has_value()) continue;
    const auto r = static_cast<size_t>(selected[i].result);
    if (r < op.returns.size() && op.returns[r].kind == ArgKind::kTensorList &&
        selected[i].element < 0) {
      const std::string name = OutputNames(op)[r];
      return absl::InvalidArgumentError(absl::StrCat(
          fields[i], " is a list of tensors, and a shared memory region holds one: request its ",
          "elements ('", ElementName(name, 0), "', '", ElementName(name, 1), "', ...) instead"));
    }
    auto slice = shm.Slice(refs[i]->region, refs[i]->offset, refs[i]->byte_size);
    if (!slice.ok()) {
      return absl::Status(slice.status().code(),
                          absl::StrCat(fields[i], ": ", slice.status().message()));
    }
    if (out.slices.empty()) out.slices.resize(refs.size());
    out.slices[i] = *std::move(slice);
  }
  return out;
}

OpCall::OutputBuffer ResultBuffer(const OpInfo& op, const std::vector<OutputRef>& selected,
                                  const ShmOutputs& outputs) {
  OpCall::OutputBuffer buffer;
  if (outputs.empty() || selected.empty() || !outputs.slices[0].has_value()) return buffer;
  if (selected[0].result != 0 || op.returns.empty() || op.returns[0].kind != ArgKind::kTensor) {
    return buffer;
  }
  buffer.data = outputs.slices[0]->data();
  buffer.bytes = static_cast<int64_t>(outputs.slices[0]->size());
  return buffer;
}

absl::Status WriteShmOutputs(const std::vector<OutputRef>& selected, const ShmOutputs& shm,
                             std::vector<OutputTensor>* outputs) {
  if (shm.empty()) return absl::OkStatus();
  for (OutputTensor& o : *outputs) {
    if (o.selected >= selected.size() || o.selected >= shm.slices.size() ||
        !shm.slices[o.selected].has_value()) {
      continue;
    }
    const SharedMemorySlice& slice = *shm.slices[o.selected];
    const absl::string_view bytes = o.bytes();
    if (bytes.size() > slice.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "output '", o.name, "' has ", bytes.size(), " bytes (shape ", ShapeString(o.shape), ", ",
          o.datatype(), "), more than its ", kByteSize, " ", slice.size()));
    }
    if (bytes.data() != slice.data() && !bytes.empty()) {
      std::memcpy(slice.data(), bytes.data(), bytes.size());
    }
    o.in_shared_memory = true;
  }
  return absl::OkStatus();
}

absl::Status CheckIntact(const std::vector<SharedMemorySlice>& inputs, const ShmOutputs& outputs) {
  for (const SharedMemorySlice& s : inputs) {
    if (absl::Status intact = s.CheckIntact(); !intact.ok()) return intact;
  }
  for (const auto& s : outputs.slices) {
    if (!s.has_value()) continue;
    if (absl::Status intact = s->CheckIntact(); !intact.ok()) return intact;
  }
  return absl::OkStatus();
}

absl::Status UnregisterRegion(const OwnedRegions& shm, const std::string& name) {
  absl::Status s = shm.Unregister(name);
  return absl::IsNotFound(s) ? absl::OkStatus() : s;
}

}  // namespace myops::server::kserve
