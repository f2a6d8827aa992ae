// Calls whose tensors travel in shared memory (see shm_call.h).
#include "shm_call.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "codec.h"
#include "myops/v1/myops.pb.h"

namespace myops::client::internal {
namespace {

constexpr uint64_t kAlignment = 64;

uint64_t Aligned(uint64_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }

// Every tensor of `call` that goes to the region: valid, wanted, each data pointer once.
std::vector<TensorView> Placed(const ShmPool& pool, const CallFields& call) {
  std::vector<TensorView> placed;
  auto consider = [&](const TensorView& t) {
    // Cheapest test first: most small tensors stop at Wants, before any validation.
    if (t.size_bytes == 0 || !pool.Wants(t.size_bytes) || !ValidateTensorView(t).ok()) return;
    for (const TensorView& p : placed) {
      if (p.data == t.data && p.size_bytes == t.size_bytes) return;
    }
    placed.push_back(t);
  };
  auto visit = [&](const Value& v) {
    if (v.kind() == Value::Kind::kTensor) consider(v.tensor());
    if (v.kind() == Value::Kind::kTensorList) {
      for (const TensorView& t : v.tensor_list()) consider(t);
    }
  };
  for (const Value& v : call.args) visit(v);
  for (const NamedArg& a : call.kwargs) visit(a.value);
  return placed;
}

}  // namespace

ResponseRegion ShmCall::region() const {
  return ResponseRegion{lease.name(), lease.data(), lease.size(), nullptr, false};
}

std::optional<ResponseRegion> ResultRegion(const std::shared_ptr<ShmCall>& shm, bool in_place) {
  if (shm == nullptr) return std::nullopt;
  ResponseRegion region = shm->region();
  region.owner = shm;
  region.in_place = in_place;
  return region;
}

absl::StatusOr<std::shared_ptr<ShmCall>> PlaceCall(ShmPool* pool, const CallFields& call,
                                                   std::optional<uint64_t> result_bytes) {
  if (pool == nullptr) return nullptr;
  const std::vector<TensorView> placed = Placed(*pool, call);
  if (placed.empty()) return nullptr;
  uint64_t inputs = 0, largest = 0;
  for (const TensorView& t : placed) {
    inputs += Aligned(t.size_bytes);
    largest = std::max<uint64_t>(largest, t.size_bytes);
  }
  const uint64_t room = result_bytes.value_or(largest);
  absl::StatusOr<std::optional<ShmLease>> lease = pool->Acquire(inputs + room);
  if (!lease.ok()) return lease.status();
  if (!lease->has_value()) return nullptr;
  auto shm = std::make_shared<ShmCall>(ShmCall{*std::move(*lease), {}});
  const std::string& name = shm->lease.name();
  uint64_t offset = 0;
  for (const TensorView& t : placed) {
    std::memcpy(shm->lease.data() + offset, t.data, t.size_bytes);  // The one copy.
    shm->placement.tensors.push_back({t.data, RegionRef{name, offset, t.size_bytes}});
    offset += Aligned(t.size_bytes);
  }
  if (room != 0) shm->placement.result = RegionRef{name, offset, room};
  return shm;
}

bool ForgetIfUnknownRegion(ShmPool* pool, const ShmCall* shm, const absl::Status& status) {
  if (pool == nullptr || shm == nullptr || !ShmPool::IsUnknownRegion(status)) return false;
  pool->ForgetRegions(shm->lease.generation());
  return true;
}

absl::StatusOr<ScaleShiftResult> DecodeScaleShift(const grpc::ByteBuffer& response,
                                                  const std::shared_ptr<ShmCall>& shm,
                                                  const TensorView& x, bool in_place) {
  const std::optional<ResponseRegion> region = ResultRegion(shm, in_place);
  absl::StatusOr<CallResult> result =
      DecodeCallResponse(response, region.has_value() ? &*region : nullptr);
  if (!result.ok()) return result.status();
  if (result->outputs.size() != 1 || result->outputs[0].kind() != Value::Kind::kTensor) {
    return absl::InternalError("the server's response to scale_shift is not one tensor");
  }
  Tensor y = result->outputs[0].TakeTensor();
  if (y.dtype() != x.dtype || y.shape() != x.shape) {
    return absl::InternalError(
        absl::StrCat("the server's scale_shift output is ", DTypeName(y.dtype()), " of shape ",
                     ShapeToString(y.shape()), "; expected ", DTypeName(x.dtype), " of shape ",
                     ShapeToString(x.shape)));
  }
  return ScaleShiftResult{std::move(y), std::move(result->timing)};
}

absl::StatusOr<Timing> DecodeScaleShiftInto(const grpc::ByteBuffer& response, const ShmCall& shm,
                                            const TensorView& x, const MutableTensorView& out) {
  std::vector<grpc::Slice> slices;
  std::string bytes;
  if (response.Dump(&slices).ok()) {
    for (const grpc::Slice& s : slices)
      bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  myops::v1::CallResponse parsed;
  if (!parsed.ParseFromString(bytes) || parsed.outputs_size() != 1 ||
      !parsed.outputs(0).has_tensor()) {
    return absl::InternalError(
        "the server's response to scale_shift is not one tensor (a malformed CallResponse)");
  }
  const myops::v1::Tensor& y = parsed.outputs(0).tensor();
  if (static_cast<DType>(y.dtype()) != x.dtype ||
      !std::equal(y.shape().begin(), y.shape().end(), x.shape.begin(), x.shape.end())) {
    return absl::InternalError(absl::StrCat(
        "the server's scale_shift output is ", DTypeName(static_cast<DType>(y.dtype())),
        " of shape ", ShapeToString(std::vector<int64_t>(y.shape().begin(), y.shape().end())),
        "; expected ", DTypeName(x.dtype), " of shape ", ShapeToString(x.shape)));
  }
  const ResponseRegion region = shm.region();
  const char* data = y.data().data();
  uint64_t size = y.data().size();
  if (y.has_shared_memory()) {
    const myops::v1::SharedMemoryRef& ref = y.shared_memory();
    if (ref.region() != region.name || !y.data().empty() || ref.offset() > region.size ||
        ref.byte_size() > region.size - ref.offset()) {
      return absl::InternalError(
          "the server's scale_shift output is in shared memory this call did not give");
    }
    data = region.data + ref.offset();
    size = ref.byte_size();
  }
  if (size != out.size_bytes) {
    return absl::InternalError(absl::StrCat("the server's scale_shift output has ", size,
                                            " bytes; expected ", out.size_bytes));
  }
  if (size != 0) std::memcpy(out.data, data, size);  // The one copy out.
  return DecodeTiming(parsed.timing());
}

}  // namespace myops::client::internal
