// SharedMemoryRegistry (see shared_memory.h): validation, shm_open + mmap of regions,
// bounds checks of slices.
#include "shm/shared_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "shm/bus_guard.h"

namespace myops::server {

// Every live mapping (registered, or unregistered but still held by a call's slice): what
// the limits bound, so that calls that hold unregistered regions cannot take mappings,
// descriptors and SIGBUS guard slots past them. Shared by the registry and its mappings
// (a slice may outlive the registry). Lock order: the registry's mu_, then this mu.
struct SharedMemoryRegistry::Ledger {
  absl::Mutex mu;
  int mappings ABSL_GUARDED_BY(mu) = 0;
  uint64_t bytes ABSL_GUARDED_BY(mu) = 0;
};

// One mapped region; unmapped (and its object's descriptor closed, its ledger entry
// returned) when the last user drops it.
class SharedMemoryMapping {
 public:
  SharedMemoryMapping(SharedMemoryRegionInfo info, int fd, void* base, size_t length, char* data,
                      int guard, std::shared_ptr<SharedMemoryRegistry::Ledger> ledger)
      : info(std::move(info)),
        fd_(fd),
        base_(base),
        length_(length),
        data_(data),
        guard_(guard),
        ledger_(std::move(ledger)) {}
  ~SharedMemoryMapping() {
    BusGuard::Release(guard_);
    munmap(base_, length_);
    close(fd_);
    absl::MutexLock lock(&ledger_->mu);
    ledger_->mappings -= 1;
    ledger_->bytes -= info.byte_size;
  }
  SharedMemoryMapping(const SharedMemoryMapping&) = delete;
  SharedMemoryMapping& operator=(const SharedMemoryMapping&) = delete;

  const SharedMemoryRegionInfo info;
  char* data() const { return data_; }
  // OK while the object still covers the region.
  absl::Status CheckSize() const {
    struct stat st;
    if (fstat(fd_, &st) != 0 || static_cast<uint64_t>(st.st_size) < info.offset + info.byte_size) {
      return absl::FailedPreconditionError(absl::StrCat(
          "shared memory region '", info.name, "': its object '", info.key,
          "' was truncated below offset + byte_size (", info.offset + info.byte_size, " bytes)"));
    }
    return absl::OkStatus();
  }
  bool tripped() const { return BusGuard::Tripped(guard_); }

 private:
  const int fd_;
  void* const base_;
  const size_t length_;
  char* const data_;
  const int guard_;
  const std::shared_ptr<SharedMemoryRegistry::Ledger> ledger_;
};

namespace {

bool Portable(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

absl::Status CheckName(const std::string& name) {
  if (name.empty() || name.size() > 128) {
    return absl::InvalidArgumentError("a shared memory region's name has 1 to 128 characters");
  }
  for (char c : name) {
    if (!Portable(c) && c != ':') {
      return absl::InvalidArgumentError(absl::StrCat(
          "shared memory region name '", name, "': only letters, digits and . _ - : allowed"));
    }
  }
  return absl::OkStatus();
}

// POSIX names: "/" then one path component. "/..", "/." and any further '/' are refused,
// so a key can name nothing but an object in the shared memory file system.
absl::Status CheckKey(const std::string& key) {
  const std::string body = !key.empty() && key[0] == '/' ? key.substr(1) : key;
  bool ok = !body.empty() && body.size() <= 250 && body != "." && body != "..";
  for (char c : body) ok = ok && Portable(c);
  if (!ok) {
    return absl::InvalidArgumentError(
        absl::StrCat("shared memory key '", key, "': expected '/' and 1 to 250 of [A-Za-z0-9._-]"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status SharedMemorySlice::CheckIntact() const {
  if (mapping_->tripped()) {
    return absl::FailedPreconditionError(absl::StrCat("shared memory region '", mapping_->info.name,
                                                      "': its object '", mapping_->info.key,
                                                      "' was truncated while the call used it"));
  }
  return mapping_->CheckSize();
}

SharedMemoryRegistry::SharedMemoryRegistry(SharedMemoryLimits limits)
    : limits_(limits), ledger_(std::make_shared<Ledger>()) {}

absl::Status SharedMemoryRegistry::Register(const std::string& owner, const std::string& name,
                                            const std::string& key, uint64_t offset,
                                            uint64_t byte_size) {
  if (absl::Status s = CheckName(name); !s.ok()) return s;
  if (absl::Status s = CheckKey(key); !s.ok()) return s;
  if (byte_size == 0 || offset > UINT64_MAX - byte_size ||
      offset + byte_size > static_cast<uint64_t>(INT64_MAX)) {
    return absl::InvalidArgumentError(
        absl::StrCat("shared memory region '", name,
                     "': byte_size must be positive and offset + byte_size "
                     "fit in 63 bits (offset ",
                     offset, ", byte_size ", byte_size, ")"));
  }
  absl::MutexLock lock(&mu_);
  if (regions_.count(Key(owner, name)) != 0) {
    return absl::AlreadyExistsError(
        absl::StrCat("shared memory region '", name, "' is already registered"));
  }
  // Reserved in the ledger before the object is touched (no other Register can pass the
  // limits meanwhile); returned if the mapping is not made.
  {
    absl::MutexLock ledger(&ledger_->mu);
    if (ledger_->mappings >= limits_.max_regions ||
        byte_size > limits_.max_total_bytes - ledger_->bytes) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "shared memory region '", name, "': over the server's limits (", limits_.max_regions,
          " regions, ", limits_.max_total_bytes, " bytes in all; ", regions_.size(),
          " regions and ", total_bytes_, " bytes registered, ", ledger_->mappings, " mappings and ",
          ledger_->bytes, " bytes in use counting unregistered ones calls still hold)"));
    }
    ledger_->mappings += 1;
    ledger_->bytes += byte_size;
  }
  auto give_back = [this, byte_size] {
    absl::MutexLock ledger(&ledger_->mu);
    ledger_->mappings -= 1;
    ledger_->bytes -= byte_size;
  };
  const std::string path = key[0] == '/' ? key : "/" + key;
  const int fd = shm_open(path.c_str(), O_RDWR | O_CLOEXEC, 0);
  if (fd < 0) {
    give_back();
    const int error = errno;
    const std::string why = absl::StrCat("shared memory region '", name, "': cannot open '", path,
                                         "': ", std::strerror(error));
    return error == ENOENT ? absl::NotFoundError(why) : absl::FailedPreconditionError(why);
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
      static_cast<uint64_t>(st.st_size) < offset + byte_size) {
    close(fd);
    give_back();
    return absl::FailedPreconditionError(absl::StrCat(
        "shared memory region '", name, "': '", path, "' holds ", static_cast<int64_t>(st.st_size),
        " bytes, fewer than offset + byte_size = ", offset + byte_size));
  }
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t start = offset / page * page;
  const size_t length = static_cast<size_t>(offset + byte_size - start);
  void* base =
      mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, static_cast<off_t>(start));
  if (base == MAP_FAILED) {
    const int error = errno;
    close(fd);
    give_back();
    return absl::FailedPreconditionError(absl::StrCat(
        "shared memory region '", name, "': cannot map '", path, "': ", std::strerror(error)));
  }
  auto guard = BusGuard::Guard(base, length);
  if (!guard.ok()) {
    munmap(base, length);
    close(fd);
    give_back();
    return guard.status();
  }
  regions_[Key(owner, name)] = std::make_shared<const SharedMemoryMapping>(
      SharedMemoryRegionInfo{name, key, offset, byte_size}, fd, base, length,
      static_cast<char*>(base) + (offset - start), *guard, ledger_);
  total_bytes_ += byte_size;
  return absl::OkStatus();
}

absl::Status SharedMemoryRegistry::Unregister(const std::string& owner, const std::string& name) {
  absl::MutexLock lock(&mu_);
  if (name.empty()) {
    // The owner's regions are one range of the map (ordered by owner first).
    auto it = regions_.lower_bound(Key(owner, ""));
    while (it != regions_.end() && it->first.first == owner) {
      total_bytes_ -= it->second->info.byte_size;
      it = regions_.erase(it);
    }
    return absl::OkStatus();
  }
  auto it = regions_.find(Key(owner, name));
  if (it == regions_.end()) {
    return absl::NotFoundError(absl::StrCat("no shared memory region '", name, "'"));
  }
  total_bytes_ -= it->second->info.byte_size;
  regions_.erase(it);
  return absl::OkStatus();
}

void SharedMemoryRegistry::UnregisterEveryOwner() {
  absl::MutexLock lock(&mu_);
  regions_.clear();
  total_bytes_ = 0;
}

absl::StatusOr<std::vector<SharedMemoryRegionInfo>> SharedMemoryRegistry::Status(
    const std::string& owner, const std::string& name) const {
  absl::MutexLock lock(&mu_);
  std::vector<SharedMemoryRegionInfo> out;
  if (name.empty()) {
    for (auto it = regions_.lower_bound(Key(owner, ""));
         it != regions_.end() && it->first.first == owner; ++it) {
      out.push_back(it->second->info);
    }
    return out;
  }
  auto it = regions_.find(Key(owner, name));
  if (it == regions_.end()) {
    return absl::NotFoundError(absl::StrCat("no shared memory region '", name, "'"));
  }
  out.push_back(it->second->info);
  return out;
}

absl::StatusOr<SharedMemorySlice> SharedMemoryRegistry::Slice(const std::string& owner,
                                                              const std::string& name,
                                                              uint64_t offset,
                                                              uint64_t byte_size) const {
  std::shared_ptr<const SharedMemoryMapping> mapping;
  {
    absl::MutexLock lock(&mu_);
    auto it = regions_.find(Key(owner, name));
    if (it == regions_.end()) {
      return absl::NotFoundError(absl::StrCat("no shared memory region '", name, "'"));
    }
    mapping = it->second;
  }
  const uint64_t size = mapping->info.byte_size;
  if (offset > size || byte_size > size - offset) {
    return absl::InvalidArgumentError(absl::StrCat("shared memory region '", name, "': bytes [",
                                                   offset, ", ", offset, " + ", byte_size,
                                                   ") pass its end (", size, " bytes)"));
  }
  if (mapping->tripped()) {
    return absl::FailedPreconditionError(
        absl::StrCat("shared memory region '", name,
                     "' was truncated while in use: unregister it and "
                     "register it again"));
  }
  if (absl::Status s = mapping->CheckSize(); !s.ok()) return s;
  SharedMemorySlice slice;
  slice.data_ = mapping->data() + offset;
  slice.size_ = byte_size;
  slice.mapping_ = std::move(mapping);
  return slice;
}

}  // namespace myops::server
