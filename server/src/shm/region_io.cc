// Reading input bytes from shared memory regions (region_io.h).
#include "shm/region_io.h"

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

namespace myops::server {

absl::StatusOr<const char*> RegionBytes(const SharedMemoryRegistry& shm, const RegionRef& ref,
                                        bool in_place, const std::string& field,
                                        const ReserveFn& reserve,
                                        std::vector<SharedMemorySlice>* slices, Scratch* scratch) {
  auto slice = shm.Slice(ref.region, ref.offset, ref.byte_size);
  if (!slice.ok()) {
    return absl::Status(slice.status().code(), absl::StrCat(field, ": ", slice.status().message()));
  }
  const char* data = slice->data();
  if (!in_place) {
    // Private bytes: the client cannot change them between a check and a use.
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
