// Shared memory in myops.v1's generic calls (see frontends/myops_v1/call_shm.h).
#include "frontends/myops_v1/call_shm.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "frontends/myops_v1/codec.h"
#include "myops/common/dtype.h"

namespace myops::server {
namespace {

absl::Status Off(const std::string& field) {
  return absl::UnimplementedError(
      absl::StrCat(field,
                   " names a shared memory region, but this server does not accept shared memory "
                   "(start it with --allow-shared-memory)"));
}

RegionRef RefOf(const myops::v1::SharedMemoryRef& r) {
  return {r.region(), r.offset(), r.byte_size()};
}

}  // namespace

absl::StatusOr<TensorView> DecodeRegionTensor(const myops::v1::Tensor& t, const std::string& field,
                                              const TensorLimits& limits, CallShm* shm) {
  if (shm == nullptr || !shm->regions) return Off(field);
  if (!t.data().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(field, " has both data and shared_memory"));
  }
  auto view = DecodeTensorHead(t, t.shared_memory().byte_size(), field, limits.InRegion());
  if (!view.ok()) return view;
  const DTypeInfo* info = FindDTypeInfo(view->dtype);
  const bool in_place = info != nullptr && info->is_floating;
  auto data = RegionBytes(shm->regions, RefOf(t.shared_memory()), in_place, ItemSize(view->dtype),
                          field, shm->reserve, &shm->slices, &shm->scratch);
  if (!data.ok()) return data.status();
  view->data = *data;
  if (view->dtype == DType::kBool) {
    for (int64_t i = 0; i < view->bytes; ++i) {
      if (static_cast<unsigned char>((*data)[i]) > 1) {
        return absl::InvalidArgumentError(
            absl::StrCat(field, " is a bool tensor with a byte other than 0 or 1"));
      }
    }
  }
  return view;
}

absl::Status ResolveResultRegions(const myops::v1::CallRequest& request, CallShm* shm) {
  for (int i = 0; i < request.result_regions_size(); ++i) {
    const myops::v1::SharedMemoryRef& ref = request.result_regions(i);
    if (ref.region().empty()) continue;
    const std::string field = absl::StrCat("result_regions[", i, "]");
    if (!shm->regions) return Off(field);
    auto slice = shm->regions.Slice(ref.region(), ref.offset(), ref.byte_size());
    if (!slice.ok()) {
      return absl::Status(slice.status().code(),
                          absl::StrCat(field, ": ", slice.status().message()));
    }
    shm->results.resize(static_cast<size_t>(request.result_regions_size()));
    shm->results[static_cast<size_t>(i)] = CallShm::Result{ref.region(), ref.offset(), *slice};
  }
  return absl::OkStatus();
}

OpCall::OutputBuffer ResultBuffer(const CallShm& shm) {
  if (shm.results.empty() || !shm.results[0].has_value()) return {};
  const SharedMemorySlice& s = shm.results[0]->slice;
  return {s.data(), static_cast<int64_t>(s.size())};
}

const CallShm::Result* ResultRegion(const CallShm& shm, size_t r, const Value& result) {
  if (r >= shm.results.size() || !shm.results[r].has_value()) return nullptr;
  const CallShm::Result& region = *shm.results[r];
  if (shm.inline_unfit && (result.kind != Value::Kind::kTensor ||
                           static_cast<uint64_t>(result.tensor.bytes) > region.slice.size())) {
    return nullptr;
  }
  return &region;
}

absl::Status FinishRegions(const OpCall& call, const CallShm& shm) {
  for (size_t r = 0; r < shm.results.size(); ++r) {
    if (!shm.results[r].has_value()) continue;
    if (r < call.results.size() && ResultRegion(shm, r, call.results[r]) == nullptr) continue;
    const std::string field = absl::StrCat("result ", r, " (result_regions[", r, "])");
    if (r >= call.results.size() || call.results[r].kind != Value::Kind::kTensor) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, " is not a tensor: only tensors go to shared memory"));
    }
    const TensorView& t = call.results[r].tensor;
    const SharedMemorySlice& slice = shm.results[r]->slice;
    if (static_cast<uint64_t>(t.bytes) > slice.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, " has ", t.bytes, " bytes, more than the region's byte_size ", slice.size()));
    }
    if (t.data != slice.data() && t.bytes > 0) {
      std::memcpy(slice.data(), t.data, static_cast<size_t>(t.bytes));
    }
  }
  for (const SharedMemorySlice& s : shm.slices) {
    if (absl::Status intact = s.CheckIntact(); !intact.ok()) return intact;
  }
  for (const auto& r : shm.results) {
    if (!r.has_value()) continue;
    if (absl::Status intact = r->slice.CheckIntact(); !intact.ok()) return intact;
  }
  return absl::OkStatus();
}

}  // namespace myops::server
