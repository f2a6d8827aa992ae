// Reading input bytes from shared memory regions (region_io.h).
#include "shm/region_io.h"

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

namespace myops::server {

absl::StatusOr<const char*> RegionBytes(const OwnedRegions& shm, const RegionRef& ref,
                                        bool in_place, int64_t item_size, const std::string& field,
                                        const ReserveFn& reserve,
                                        std::vector<SharedMemorySlice>* slices, Scratch* scratch) {
  auto slice = shm.Slice(ref.region, ref.offset, ref.byte_size);
  if (!slice.ok()) {
    return absl::Status(slice.status().code(), absl::StrCat(field, ": ", slice.status().message()));
  }
  const char* data = slice->data();
  const bool aligned =
      item_size <= 1 || reinterpret_cast<uintptr_t>(data) % static_cast<uintptr_t>(item_size) == 0;
  if (!in_place || !aligned) {
    // Private bytes: the client cannot change them between a check and a use, and new[]
    // aligns them for any item size (__STDCPP_DEFAULT_NEW_ALIGNMENT__, 16).
    const uint64_t n = ref.byte_size;
    if (absl::Status granted = reserve(static_cast<int64_t>(n)); !granted.ok()) return granted;
    auto copy = std::make_unique<char[]>(n == 0 ? 1 : n);
    if (n > 0) std::memcpy(copy.get(), slice->data(), n);
    data = copy.get();
    scratch->push_back(std::move(copy));
  }
  slices->push_back(*std::move(slice));
  return data;
}

}  // namespace myops::server
