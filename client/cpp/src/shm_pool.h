// The client's shared memory (ClientOptions::shared_memory): POSIX shared memory regions
// that one Client creates, registers with its server (the Open Inference Protocol's
// SystemSharedMemoryRegister, on the client's channel) and reuses across calls, so that
// the tensors of calls to a server on the same host cross no socket.
//
// A region's object is unlinked as soon as the server has registered it (the server
// keeps its own descriptor), so no name is left in /dev/shm whatever happens to the
// client; a region the server no longer knows (it restarted) is dropped, never
// registered again. Regions are unregistered when the pool is destroyed (with the
// Client's core) or evicted.
#ifndef MYOPS_CLIENT_SRC_SHM_POOL_H_
#define MYOPS_CLIENT_SRC_SHM_POOL_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <grpcpp/channel.h>
#include <grpcpp/client_context.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "myops/client/options.h"

namespace myops::client::internal {

// One mapped, registered region. Immutable; unmapped when the last reference goes.
struct ShmRegion {
  std::string name;  // registered name
  char* data = nullptr;
  uint64_t size = 0;
  uint64_t generation = 0;  // the pool's generation it was registered in
  ShmRegion() = default;
  ShmRegion(const ShmRegion&) = delete;
  ShmRegion& operator=(const ShmRegion&) = delete;
  ~ShmRegion();
};

class ShmPool;

// Exclusive use of one region for one call; returns it to its pool when destroyed (or
// frees it when the pool is gone or has dropped it). Movable, not copyable. Holding a
// lease keeps the region mapped, even after the Client is destroyed; it does not keep
// the pool (and its channel) alive.
class ShmLease {
 public:
  ShmLease(std::weak_ptr<ShmPool> pool, std::shared_ptr<ShmRegion> region)
      : pool_(std::move(pool)), region_(std::move(region)) {}
  ShmLease(ShmLease&&) = default;
  ShmLease& operator=(ShmLease&&) = default;
  ~ShmLease();

  const std::string& name() const { return region_->name; }
  char* data() const { return region_->data; }
  uint64_t size() const { return region_->size; }
  uint64_t generation() const { return region_->generation; }

 private:
  std::weak_ptr<ShmPool> pool_;
  std::shared_ptr<ShmRegion> region_;
};

// Thread-safe. Owned by the Client's core (whose destruction never runs on a gRPC
// thread, see GrpcCallbackScope); leases refer to it weakly.
class ShmPool : public std::enable_shared_from_this<ShmPool> {
 public:
  // Adds the call metadata (the bearer token) to a context of the pool's RPCs.
  using Authorize = std::function<void(grpc::ClientContext*)>;

  // A pool for a client of `options` (shared_memory must not be kOff) on `channel`.
  static std::shared_ptr<ShmPool> Create(std::shared_ptr<grpc::Channel> channel,
                                         const ClientOptions& options, Authorize authorize);
  ~ShmPool();  // unregisters every region, leased ones too (their mappings stay)

  // A lease of a region of at least `bytes`. nullopt: send the call's tensors inline
  // (kAuto, and shared memory is not available, or not now: a region cannot be made or
  // registered, or `bytes` is over max_shared_memory_bytes). In kOn mode those are
  // errors: FAILED_PRECONDITION saying why shared memory cannot be used, or
  // RESOURCE_EXHAUSTED.
  absl::StatusOr<std::optional<ShmLease>> Acquire(uint64_t bytes);

  // Whether tensors of `bytes` should travel in shared memory: kOn, or kAuto with
  // bytes >= shared_memory_min_bytes, and shared memory not known to be unavailable.
  bool Wants(uint64_t bytes) const;

  // After the server reported a region of generation `generation` unknown (it
  // restarted): drops every region of that generation, unless a newer one has begun
  // since (another call saw the same); later leases get new regions.
  void ForgetRegions(uint64_t generation);

  // Whether `status` is the server's answer to a region it does not know.
  static bool IsUnknownRegion(const absl::Status& status);

 private:
  friend class ShmLease;
  ShmPool(std::shared_ptr<grpc::Channel> channel, const ClientOptions& options,
          Authorize authorize);

  // Creates, maps and registers a region of `size` bytes, of pool generation
  // `generation`; unlinks its object.
  absl::StatusOr<std::shared_ptr<ShmRegion>> NewRegion(uint64_t size, uint64_t generation);
  void Unregister(const std::vector<std::string>& names);
  void Release(std::shared_ptr<ShmRegion> region);

  const std::shared_ptr<grpc::Channel> channel_;
  const SharedMemoryMode mode_;
  const uint64_t min_bytes_;
  const uint64_t max_bytes_;         // most bytes of regions at once (free and leased)
  const uint64_t max_pooled_bytes_;  // most bytes of free regions kept
  const Authorize authorize_;
  const std::string prefix_;  // of the object and region names: per pool, unguessable

  mutable std::mutex mu_;
  std::vector<std::shared_ptr<ShmRegion>> free_;  // guarded by mu_
  std::vector<std::string> live_;     // names registered, of this generation; guarded by mu_
  std::vector<std::string> evicted_;  // to unregister; guarded by mu_
  uint64_t bytes_ = 0;                // of every live region of this generation; guarded by mu_
  uint64_t generation_ = 0;           // guarded by mu_
  uint64_t next_id_ = 0;              // guarded by mu_
  // Why shared memory cannot be used with this server (once the server said so); OK
  // while it can or is not known yet. Guarded by mu_.
  absl::Status unavailable_;
  // The last registration's failure that may pass, and when to try again. Guarded by mu_.
  absl::Status last_failure_;
  std::chrono::steady_clock::time_point retry_after_;
};

// Whether `target` (a gRPC target) names only this host: unix sockets, localhost and
// loopback addresses.
bool IsLocalTarget(absl::string_view target);

}  // namespace myops::client::internal

#endif  // MYOPS_CLIENT_SRC_SHM_POOL_H_
