// System shared memory regions that clients on this host register, so that tensors pass
// through memory instead of the loopback TCP stack: the registry behind the Open
// Inference Protocol's system shared memory extension (Triton's SystemSharedMemory*
// RPCs) and myops.v1's region references. Protocol-neutral: no protobuf, no torch.
//
// A region is a POSIX shared memory object (shm_open `key`, e.g. "/myops_input0") that
// the client created; the server maps [offset, offset + byte_size) of it read-write
// when it is registered under `name`, and calls address slices of it. The client owns
// the memory: every size is checked (overflow-free) against the region and the object's
// current size; a client that shrinks the object while the server uses it makes that
// call fail, never the server crash (bus_guard.h). Mappings are bounded in number and
// total bytes (SharedMemoryLimits), counting unregistered regions that calls in flight
// still hold (their mapping lives until the last slice is released), and unmapped when
// unregistered and released, or when the registry is destroyed (the server stops).
//
// Regions have an owner: the client identity that registered them (the front ends pass
// the caller's tenant, BearerAuth::Tenant: "tenant N" for the N-th token of
// --auth-token-file, "" for everyone when there are no tokens). A name is the owner's
// own: two owners may register the same name, and no owner sees, uses or unregisters
// another's regions (NOT_FOUND, as for a name never registered). The limits are the
// server's, over all owners.
//
// Thread-safety: all methods may be called concurrently. A Slice keeps its mapping alive
// after the region is unregistered, until the call using it releases it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace myops::server {

struct SharedMemoryLimits {
  int max_regions = 64;
  uint64_t max_total_bytes = uint64_t{64} << 30;  // mapped, not allocated: the client's memory
};

// What Status reports of one region.
struct SharedMemoryRegionInfo {
  std::string name;
  std::string key;
  uint64_t offset = 0;
  uint64_t byte_size = 0;
};

class SharedMemoryMapping;

// Bytes [data, data + size) of a registered region, for one call.
class SharedMemorySlice {
 public:
  char* data() const { return data_; }
  uint64_t size() const { return size_; }
  // OK, or FAILED_PRECONDITION when the client shrank the object under the slice while
  // it was in use (its pages read as zeros, writes were lost): check after the call.
  absl::Status CheckIntact() const;

 private:
  friend class SharedMemoryRegistry;
  std::shared_ptr<const SharedMemoryMapping> mapping_;
  char* data_ = nullptr;
  uint64_t size_ = 0;
};

class SharedMemoryRegistry {
 public:
  explicit SharedMemoryRegistry(SharedMemoryLimits limits);

  // Maps [offset, offset + byte_size) of the object `key` as `owner`'s region `name`.
  // INVALID_ARGUMENT for a malformed name or key (keys are "/" + [A-Za-z0-9._-]{1,250}; no
  // other '/') or a zero or overflowing size; ALREADY_EXISTS for a name the owner has
  // registered; NOT_FOUND when no such object exists; FAILED_PRECONDITION when it is
  // smaller than offset + byte_size; RESOURCE_EXHAUSTED over the limits (which count
  // unregistered regions that calls still hold).
  absl::Status Register(const std::string& owner, const std::string& name, const std::string& key,
                        uint64_t offset, uint64_t byte_size);
  // Unregisters `owner`'s region `name` ("": every region of the owner). NOT_FOUND for a
  // name the owner has not registered.
  absl::Status Unregister(const std::string& owner, const std::string& name);
  // Every owner's regions (the server stops).
  void UnregisterEveryOwner();
  // `owner`'s region `name` ("": all of the owner's, by name). NOT_FOUND as Unregister.
  absl::StatusOr<std::vector<SharedMemoryRegionInfo>> Status(const std::string& owner,
                                                             const std::string& name) const;
  // Bytes [offset, offset + byte_size) of `owner`'s region `name`: NOT_FOUND for an
  // unknown region; INVALID_ARGUMENT, naming the region, when they overflow or pass its
  // end; FAILED_PRECONDITION when the object is now smaller than the region.
  absl::StatusOr<SharedMemorySlice> Slice(const std::string& owner, const std::string& name,
                                          uint64_t offset, uint64_t byte_size) const;

 private:
  using Key = std::pair<std::string, std::string>;  // (owner, name)

  const SharedMemoryLimits limits_;
  mutable absl::Mutex mu_;
  std::map<Key, std::shared_ptr<const SharedMemoryMapping>> regions_ ABSL_GUARDED_BY(mu_);
  uint64_t total_bytes_ ABSL_GUARDED_BY(mu_) = 0;

 public:
  struct Ledger;  // the live mappings (shared_memory.cc)

 private:
  const std::shared_ptr<Ledger> ledger_;
};

// One client's view of the registry: the regions its owner identity registered, or no
// registry at all (the server does not accept shared memory; false). A value the front
// ends pass along a call; the registry must outlive it.
class OwnedRegions {
 public:
  OwnedRegions() = default;
  OwnedRegions(SharedMemoryRegistry* registry, std::string owner)
      : registry_(registry), owner_(std::move(owner)) {}

  explicit operator bool() const { return registry_ != nullptr; }
  const std::string& owner() const { return owner_; }

  // The registry's methods for this owner; the registry must exist.
  absl::Status Register(const std::string& name, const std::string& key, uint64_t offset,
                        uint64_t byte_size) const {
    return registry_->Register(owner_, name, key, offset, byte_size);
  }
  absl::Status Unregister(const std::string& name) const {
    return registry_->Unregister(owner_, name);
  }
  absl::StatusOr<std::vector<SharedMemoryRegionInfo>> Status(const std::string& name) const {
    return registry_->Status(owner_, name);
  }
  absl::StatusOr<SharedMemorySlice> Slice(const std::string& name, uint64_t offset,
                                          uint64_t byte_size) const {
    return registry_->Slice(owner_, name, offset, byte_size);
  }

 private:
  SharedMemoryRegistry* registry_ = nullptr;
  std::string owner_;
};

}  // namespace myops::server
