// The client's shared memory regions (see shm_pool.h).
#include "shm_pool.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <random>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "grpc_status.h"
#include "kserve/v2/grpc_predict_v2.grpc.pb.h"

namespace myops::client::internal {
namespace {

// Regions are made in sizes of 2^k bytes from 1 MiB, so that calls of similar sizes
// reuse them.
constexpr uint64_t kMinRegionBytes = uint64_t{1} << 20;
// The pool's own RPCs (register, unregister) wait at most this long.
constexpr std::chrono::seconds kRpcDeadline{2};
// After a registration failed for a reason that may pass (the server's region limit, a
// server not reachable), no new region is tried for this long: calls meanwhile go inline
// (kAuto) or fail (kOn) at once, not one failing RPC each.
constexpr std::chrono::seconds kRetryNewRegionAfter{1};

uint64_t RegionSize(uint64_t bytes) {
  uint64_t size = kMinRegionBytes;
  while (size < bytes && size < (uint64_t{1} << 62)) size <<= 1;
  return std::max(size, bytes);
}

std::string RandomPrefix() {
  std::random_device device;
  const uint64_t r = (uint64_t{device()} << 32) ^ device();
  return absl::StrCat("myops_client_", getpid(), "_", absl::Hex(r, absl::kZeroPad16));
}

bool IsLocalHost(absl::string_view host) {
  if (absl::ConsumePrefix(&host, "[")) absl::ConsumeSuffix(&host, "]");
  return host == "localhost" || host == "::1" || absl::StartsWith(host, "127.") ||
         absl::EndsWith(host, ".localhost") || host == "0:0:0:0:0:0:0:1";
}

// "host:port" (or "[v6]:port") to its host.
absl::string_view HostOf(absl::string_view address) {
  if (absl::StartsWith(address, "[")) {
    const size_t end = address.find(']');
    return end == absl::string_view::npos ? address : address.substr(0, end + 1);
  }
  const size_t colon = address.rfind(':');
  return colon == absl::string_view::npos ? address : address.substr(0, colon);
}

}  // namespace

bool IsLocalTarget(absl::string_view target) {
  if (absl::StartsWith(target, "unix:") || absl::StartsWith(target, "unix-abstract:")) return true;
  for (absl::string_view scheme : {"ipv4:", "ipv6:"}) {
    if (absl::ConsumePrefix(&target, scheme)) {
      for (absl::string_view address : absl::StrSplit(target, ',')) {
        absl::ConsumePrefix(&address, "//");
        if (!IsLocalHost(HostOf(address))) return false;
      }
      return true;
    }
  }
  if (absl::ConsumePrefix(&target, "dns:")) {
    // dns:///host:port or dns://authority/host:port
    const size_t slash = target.find('/', absl::StartsWith(target, "//") ? 2 : 0);
    if (slash != absl::string_view::npos) target = target.substr(slash + 1);
  }
  return IsLocalHost(HostOf(target));
}

ShmRegion::~ShmRegion() {
  if (data != nullptr) munmap(data, static_cast<size_t>(size));
}

ShmLease::~ShmLease() {
  if (region_ == nullptr) return;  // moved from
  if (std::shared_ptr<ShmPool> pool = pool_.lock()) pool->Release(std::move(region_));
}

std::shared_ptr<ShmPool> ShmPool::Create(std::shared_ptr<grpc::Channel> channel,
                                         const ClientOptions& options, Authorize authorize) {
  return std::shared_ptr<ShmPool>(new ShmPool(std::move(channel), options, std::move(authorize)));
}

ShmPool::ShmPool(std::shared_ptr<grpc::Channel> channel, const ClientOptions& options,
                 Authorize authorize)
    : channel_(std::move(channel)),
      mode_(options.shared_memory),
      min_bytes_(static_cast<uint64_t>(options.shared_memory_min_bytes)),
      max_bytes_(static_cast<uint64_t>(options.max_shared_memory_bytes)),
      max_pooled_bytes_(static_cast<uint64_t>(options.max_pooled_shared_memory_bytes)),
      authorize_(std::move(authorize)),
      prefix_(RandomPrefix()) {
  if (mode_ == SharedMemoryMode::kAuto && !IsLocalTarget(options.target)) {
    unavailable_ = absl::FailedPreconditionError(
        absl::StrCat("the target \"", options.target, "\" is not on this host"));
  }
}

ShmPool::~ShmPool() {
  std::vector<std::string> names;
  names.swap(evicted_);
  names.insert(names.end(), live_.begin(), live_.end());
  Unregister(names);
}

bool ShmPool::Wants(uint64_t bytes) const {
  if (mode_ == SharedMemoryMode::kOn) return true;
  if (bytes < min_bytes_) return false;
  std::lock_guard<std::mutex> lock(mu_);
  return unavailable_.ok();
}

bool ShmPool::IsUnknownRegion(const absl::Status& status) {
  return status.code() == absl::StatusCode::kNotFound &&
         absl::StrContains(status.message(), "no shared memory region 'myops_client_");
}

void ShmPool::ForgetRegions(uint64_t generation) {
  std::vector<std::shared_ptr<ShmRegion>> dropped;
  std::lock_guard<std::mutex> lock(mu_);
  if (generation != generation_) return;
  ++generation_;
  bytes_ = 0;
  live_.clear();
  dropped.swap(free_);  // unmapped after the unlock
}

absl::StatusOr<std::optional<ShmLease>> ShmPool::Acquire(uint64_t bytes) {
  const bool required = mode_ == SharedMemoryMode::kOn;
  auto refuse = [&](absl::Status why) -> absl::StatusOr<std::optional<ShmLease>> {
    if (!required) return std::nullopt;
    return absl::Status(why.code(), absl::StrCat("shared_memory is on, but ", why.message()));
  };
  std::vector<std::string> evict;
  std::shared_ptr<ShmRegion> region;
  uint64_t generation = 0;  // of the bytes reserved for a new region
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!unavailable_.ok()) return refuse(unavailable_);
    // The smallest free region that fits.
    auto best = free_.end();
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if ((*it)->size >= bytes && (best == free_.end() || (*it)->size < (*best)->size)) best = it;
    }
    if (best != free_.end()) {
      region = std::move(*best);
      free_.erase(best);
    } else {
      if (std::chrono::steady_clock::now() < retry_after_) return refuse(last_failure_);
      // Room for a new region: evict free ones, largest first, while over the limit.
      const uint64_t size = RegionSize(bytes);
      std::sort(free_.begin(), free_.end(),
                [](const auto& a, const auto& b) { return a->size < b->size; });
      while (!free_.empty() && (size > max_bytes_ || bytes_ > max_bytes_ - size)) {
        bytes_ -= free_.back()->size;
        evict.push_back(free_.back()->name);
        live_.erase(std::find(live_.begin(), live_.end(), free_.back()->name));
        free_.pop_back();
      }
      if (size > max_bytes_ || bytes_ > max_bytes_ - size) {
        return refuse(absl::ResourceExhaustedError(absl::StrCat(
            "a call needs ", bytes, " bytes of shared memory and this client has ", bytes_,
            " bytes of regions in use (max_shared_memory_bytes ", max_bytes_, ")")));
      }
      bytes_ += size;
      generation = generation_;
    }
    evict.insert(evict.end(), evicted_.begin(), evicted_.end());
    evicted_.clear();
  }
  Unregister(evict);
  if (region == nullptr) {
    absl::StatusOr<std::shared_ptr<ShmRegion>> made = NewRegion(RegionSize(bytes), generation);
    if (!made.ok()) {
      std::lock_guard<std::mutex> lock(mu_);
      if (generation == generation_) bytes_ -= RegionSize(bytes);
      // What the server says of every region: it does not take shared memory, or cannot
      // open this client's objects (another host or container, another user).
      const absl::StatusCode code = made.status().code();
      if (code == absl::StatusCode::kUnimplemented || code == absl::StatusCode::kNotFound ||
          code == absl::StatusCode::kFailedPrecondition ||
          code == absl::StatusCode::kPermissionDenied) {
        unavailable_ = made.status();
      } else {
        last_failure_ = made.status();
        retry_after_ = std::chrono::steady_clock::now() + kRetryNewRegionAfter;
      }
      return refuse(made.status());
    }
    region = *std::move(made);
    std::lock_guard<std::mutex> lock(mu_);
    if (region->generation == generation_) live_.push_back(region->name);
  }
  return std::optional<ShmLease>(ShmLease(weak_from_this(), std::move(region)));
}

absl::StatusOr<std::shared_ptr<ShmRegion>> ShmPool::NewRegion(uint64_t size, uint64_t generation) {
  uint64_t id = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    id = next_id_++;
  }
  auto region = std::make_shared<ShmRegion>();
  region->name = absl::StrCat(prefix_, "_", id);
  region->generation = generation;
  const std::string key = "/" + region->name;
  const int fd = shm_open(key.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    return absl::InternalError(
        absl::StrCat("cannot create shared memory object ", key, ": ", std::strerror(errno)));
  }
  void* data = MAP_FAILED;
  int error = 0;
  if (ftruncate(fd, static_cast<off_t>(size)) != 0) {
    error = errno;
  } else {
    data = mmap(nullptr, static_cast<size_t>(size), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (data == MAP_FAILED) error = errno;
  }
  close(fd);
  if (data == MAP_FAILED) {
    shm_unlink(key.c_str());
    return absl::ResourceExhaustedError(absl::StrCat("cannot make a shared memory region of ", size,
                                                     " bytes: ", std::strerror(error)));
  }
  region->data = static_cast<char*>(data);
  region->size = size;

  inference::SystemSharedMemoryRegisterRequest request;
  request.set_name(region->name);
  request.set_key(key);
  request.set_byte_size(size);
  inference::SystemSharedMemoryRegisterResponse response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + kRpcDeadline);
  authorize_(&context);
  const grpc::Status status =
      inference::GRPCInferenceService::NewStub(channel_)->SystemSharedMemoryRegister(
          &context, request, &response);
  shm_unlink(key.c_str());  // The server keeps its own descriptor.
  if (!status.ok()) return ToAbslStatus(status);
  return region;
}

void ShmPool::Release(std::shared_ptr<ShmRegion> region) {
  std::shared_ptr<ShmRegion> dropped;  // unmapped after the unlock
  std::lock_guard<std::mutex> lock(mu_);
  if (region->generation != generation_) {
    dropped = std::move(region);  // the server no longer knows it
    return;
  }
  uint64_t pooled = 0;
  for (const auto& r : free_) pooled += r->size;
  if (pooled + region->size > max_pooled_bytes_) {
    bytes_ -= region->size;
    live_.erase(std::find(live_.begin(), live_.end(), region->name));
    evicted_.push_back(region->name);  // unregistered by the next Acquire, or ~ShmPool
    dropped = std::move(region);
    return;
  }
  free_.push_back(std::move(region));
}

void ShmPool::Unregister(const std::vector<std::string>& names) {
  if (names.empty()) return;
  auto stub = inference::GRPCInferenceService::NewStub(channel_);
  for (const std::string& name : names) {
    inference::SystemSharedMemoryUnregisterRequest request;
    request.set_name(name);
    inference::SystemSharedMemoryUnregisterResponse response;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + kRpcDeadline);
    authorize_(&context);
    const grpc::Status status = stub->SystemSharedMemoryUnregister(&context, request, &response);
    // Best effort; a server that is gone or does not answer is not asked again.
    if (status.error_code() == grpc::StatusCode::UNAVAILABLE ||
        status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
      return;
    }
  }
}

}  // namespace myops::client::internal
