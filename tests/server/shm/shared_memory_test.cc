// SharedMemoryRegistry, BusGuard and RegionBytes against real POSIX shared memory objects:
// the registration rules, bounds, limits, data seen by both sides, a client that shrinks
// or unlinks its object while the server uses it, and input bytes read in place or copied.
#include "shm/shared_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "shm/bus_guard.h"
#include "shm/region_io.h"

namespace myops::server {
namespace {

// A client's shared memory object of `size` bytes, mapped on the client's side too.
class ClientObject {
 public:
  explicit ClientObject(size_t size)
      : key_("/myops_shm_test_" + std::to_string(getpid()) + "_" + std::to_string(next_++)) {
    fd_ = shm_open(key_.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    EXPECT_GE(fd_, 0);
    EXPECT_EQ(ftruncate(fd_, static_cast<off_t>(size)), 0);
    data_ = static_cast<char*>(mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0));
    size_ = size;
  }
  ~ClientObject() {
    munmap(data_, size_);
    close(fd_);
    shm_unlink(key_.c_str());
  }
  const std::string& key() const { return key_; }
  char* data() { return data_; }
  void Truncate(size_t size) { ASSERT_EQ(ftruncate(fd_, static_cast<off_t>(size)), 0); }

 private:
  static inline int next_ = 0;
  std::string key_;
  int fd_ = -1;
  char* data_ = nullptr;
  size_t size_ = 0;
};

constexpr size_t kPage = 4096;
constexpr char kOwner[] = "tenant 1";  // the tests but one use one owner's view

TEST(SharedMemoryTest, RegisterSliceStatusUnregister) {
  ClientObject object(4 * kPage);
  SharedMemoryRegistry registry({});
  ASSERT_TRUE(registry.Register(kOwner, "in", object.key(), kPage + 16, 1024).ok());
  std::strcpy(object.data() + kPage + 16 + 100, "from the client");
  auto slice = registry.Slice(kOwner, "in", 100, 64);
  ASSERT_TRUE(slice.ok()) << slice.status();
  EXPECT_STREQ(slice->data(), "from the client");
  std::strcpy(slice->data() + 32, "from the server");
  EXPECT_STREQ(object.data() + kPage + 16 + 132, "from the server");
  EXPECT_TRUE(slice->CheckIntact().ok());

  auto status = registry.Status(kOwner, "in");
  ASSERT_TRUE(status.ok());
  ASSERT_EQ(status->size(), 1u);
  EXPECT_EQ((*status)[0].key, object.key());
  EXPECT_EQ((*status)[0].offset, kPage + 16);
  EXPECT_EQ((*status)[0].byte_size, 1024u);
  EXPECT_EQ(registry.Register(kOwner, "in", object.key(), 0, 8).code(),
            absl::StatusCode::kAlreadyExists);
  ASSERT_TRUE(registry.Unregister(kOwner, "in").ok());
  EXPECT_EQ(registry.Slice(kOwner, "in", 0, 1).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(registry.Unregister(kOwner, "in").code(), absl::StatusCode::kNotFound);
  // The slice taken before keeps its mapping.
  EXPECT_STREQ(slice->data(), "from the client");
}

// Regions belong to the owner that registered them: another owner neither sees, slices
// nor unregisters them (NOT_FOUND, as for a name never registered), may register the same
// name for itself, and "unregister all" takes only its own. The limits are over all owners.
TEST(SharedMemoryTest, RegionsBelongToTheirOwner) {
  ClientObject object(kPage);
  SharedMemoryRegistry registry(SharedMemoryLimits{3, 1 << 20});
  const OwnedRegions a(&registry, "tenant 1");
  const OwnedRegions b(&registry, "tenant 2");
  ASSERT_TRUE(a.Register("in", object.key(), 0, 64).ok());
  ASSERT_TRUE(a.Register("out", object.key(), 64, 64).ok());
  EXPECT_EQ(b.Slice("in", 0, 8).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(b.Status("in").status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(b.Status("")->empty());
  EXPECT_EQ(b.Unregister("in").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(OwnedRegions(&registry, "").Slice("in", 0, 8).status().code(),
            absl::StatusCode::kNotFound);
  ASSERT_TRUE(b.Register("in", object.key(), 128, 32).ok());  // b's own "in"
  EXPECT_EQ(b.Register("x", object.key(), 0, 8).code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(b.Status("in")->at(0).offset, 128u);
  EXPECT_EQ(a.Status("in")->at(0).offset, 0u);
  ASSERT_TRUE(b.Unregister("").ok());  // b's only
  EXPECT_TRUE(b.Status("")->empty());
  ASSERT_EQ(a.Status("")->size(), 2u);
  EXPECT_TRUE(a.Slice("in", 0, 64).ok());
  ASSERT_TRUE(a.Unregister("").ok());
  EXPECT_TRUE(a.Status("")->empty());
}

TEST(SharedMemoryTest, NamesAndKeysAreValidated) {
  ClientObject object(kPage);
  SharedMemoryRegistry registry({});
  for (const std::string& key : std::vector<std::string>{
           "", "/", "/..", "..", "/a/b", "/../etc/passwd", "/x y", std::string(300, 'k')}) {
    EXPECT_EQ(registry.Register(kOwner, "r", key, 0, 8).code(), absl::StatusCode::kInvalidArgument)
        << key;
  }
  for (const std::string name : std::vector<std::string>{"", "a/b", "a b", std::string(200, 'n')}) {
    EXPECT_EQ(registry.Register(kOwner, name, object.key(), 0, 8).code(),
              absl::StatusCode::kInvalidArgument)
        << name;
  }
  EXPECT_EQ(registry.Register(kOwner, "r", "/myops_shm_test_missing", 0, 8).code(),
            absl::StatusCode::kNotFound);
  EXPECT_TRUE(registry.Register(kOwner, "r", object.key().substr(1), 0, 8).ok());  // '/' optional
}

TEST(SharedMemoryTest, SizesAreCheckedWithoutOverflow) {
  ClientObject object(kPage);
  SharedMemoryRegistry registry({});
  EXPECT_EQ(registry.Register(kOwner, "r", object.key(), 0, 0).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.Register(kOwner, "r", object.key(), UINT64_MAX - 4, 8).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.Register(kOwner, "r", object.key(), 8, kPage).code(),
            absl::StatusCode::kFailedPrecondition);  // past the object's end
  ASSERT_TRUE(registry.Register(kOwner, "r", object.key(), 8, 100).ok());
  EXPECT_TRUE(registry.Slice(kOwner, "r", 0, 100).ok());
  EXPECT_TRUE(registry.Slice(kOwner, "r", 100, 0).ok());
  EXPECT_EQ(registry.Slice(kOwner, "r", 1, 100).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.Slice(kOwner, "r", 101, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.Slice(kOwner, "r", 50, UINT64_MAX - 10).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(SharedMemoryTest, LimitsBoundCountAndBytes) {
  ClientObject object(kPage);
  SharedMemoryRegistry registry({/*max_regions=*/2, /*max_total_bytes=*/1000});
  ASSERT_TRUE(registry.Register(kOwner, "a", object.key(), 0, 600).ok());
  EXPECT_EQ(registry.Register(kOwner, "b", object.key(), 0, 401).code(),
            absl::StatusCode::kResourceExhausted);
  ASSERT_TRUE(registry.Register(kOwner, "b", object.key(), 0, 400).ok());
  EXPECT_EQ(registry.Register(kOwner, "c", object.key(), 0, 1).code(),
            absl::StatusCode::kResourceExhausted);
  ASSERT_TRUE(registry.Unregister(kOwner, "").ok());
  EXPECT_TRUE(registry.Status(kOwner, "")->empty());
  EXPECT_TRUE(registry.Register(kOwner, "c", object.key(), 0, 1000).ok());
}

// Unregistered regions that calls still hold (a slice not yet released: a call whose
// response the client never takes) stay mapped, so they count against the limits until
// released; before, each cycle of register, call, unregister took one more mapping,
// descriptor and SIGBUS guard slot outside them.
TEST(SharedMemoryTest, UnregisteredRegionsThatCallsHoldCountAgainstTheLimits) {
  ClientObject object(kPage);
  SharedMemoryRegistry registry({/*max_regions=*/2, /*max_total_bytes=*/1000});
  std::vector<SharedMemorySlice> held;
  for (const char* name : {"a", "b"}) {
    ASSERT_TRUE(registry.Register(kOwner, name, object.key(), 0, 100).ok());
    auto slice = registry.Slice(kOwner, name, 0, 100);
    ASSERT_TRUE(slice.ok());
    held.push_back(*std::move(slice));
    ASSERT_TRUE(registry.Unregister(kOwner, name).ok());
  }
  EXPECT_TRUE(registry.Status(kOwner, "")->empty());
  const absl::Status refused = registry.Register(kOwner, "c", object.key(), 0, 100);
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(refused.message().find("0 regions and 0 bytes registered, 2 mappings and 200 bytes "
                                   "in use counting unregistered ones calls still hold"),
            std::string::npos)
      << refused.message();
  held.pop_back();  // the call is done
  EXPECT_TRUE(registry.Register(kOwner, "c", object.key(), 0, 100).ok());
  EXPECT_EQ(registry.Register(kOwner, "d", object.key(), 0, 100).code(),
            absl::StatusCode::kResourceExhausted);
  held.clear();
  ASSERT_TRUE(registry.Unregister(kOwner, "c").ok());
  EXPECT_TRUE(registry.Register(kOwner, "d", object.key(), 0, 1000).ok());  // bytes returned too
}

// A registration that fails after the limits were checked (no such object) takes nothing.
TEST(SharedMemoryTest, AFailedRegistrationTakesNoPlace) {
  ClientObject object(kPage);
  SharedMemoryRegistry registry({/*max_regions=*/1, /*max_total_bytes=*/2 * kPage});
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(registry.Register(kOwner, "x", "/myops_no_such_object", 0, 100).code(),
              absl::StatusCode::kNotFound);
    EXPECT_EQ(registry.Register(kOwner, "x", object.key(), 0, 2 * kPage).code(),
              absl::StatusCode::kFailedPrecondition);
  }
  EXPECT_TRUE(registry.Register(kOwner, "x", object.key(), 0, kPage).ok());
}

TEST(SharedMemoryTest, ShrunkObjectIsRefusedBeforeUse) {
  ClientObject object(4 * kPage);
  SharedMemoryRegistry registry({});
  ASSERT_TRUE(registry.Register(kOwner, "r", object.key(), 0, 4 * kPage).ok());
  object.Truncate(kPage);
  EXPECT_EQ(registry.Slice(kOwner, "r", 0, 8).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(SharedMemoryTest, ShrunkWhileInUseFailsTheCallNotTheServer) {
  ClientObject object(4 * kPage);
  SharedMemoryRegistry registry({});
  ASSERT_TRUE(registry.Register(kOwner, "r", object.key(), 0, 4 * kPage).ok());
  auto slice = registry.Slice(kOwner, "r", 0, 4 * kPage);
  ASSERT_TRUE(slice.ok());
  object.Truncate(kPage);  // the client shrinks it under a call
  // Reading and writing past the object's new end would raise SIGBUS.
  volatile char* past = slice->data() + 3 * kPage;
  past[0] = 7;
  EXPECT_EQ(past[0], 7);  // a private page now
  EXPECT_EQ(slice->CheckIntact().code(), absl::StatusCode::kFailedPrecondition);
  object.Truncate(4 * kPage);  // grown again: the region stays refused
  EXPECT_EQ(registry.Slice(kOwner, "r", 0, 8).status().code(),
            absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(registry.Unregister(kOwner, "r").ok());
  ASSERT_TRUE(registry.Register(kOwner, "r", object.key(), 0, 4 * kPage).ok());
  EXPECT_TRUE(registry.Slice(kOwner, "r", 0, 8).ok());
}

TEST(SharedMemoryDeathTest, SigbusOutsideGuardedRegionsStillKills) {
  ClientObject guarded(kPage);
  SharedMemoryRegistry registry({});
  ASSERT_TRUE(registry.Register(kOwner, "r", guarded.key(), 0, kPage).ok());  // handler installed
  EXPECT_DEATH(
      {
        ClientObject other(2 * kPage);
        // The child dies before the destructor runs: unlink now (the mapping stays).
        shm_unlink(other.key().c_str());
        other.Truncate(0);
        volatile char* p = other.data() + kPage;
        p[0] = 1;
      },
      "");
}

// A tensor's bytes are read in place only where they are aligned for its item size
// (kernels load whole elements); elsewhere, and where the front end asks for a private
// copy, they are copied, the copy reserved and aligned for any item size.
TEST(RegionBytesTest, MisalignedBytesAreCopiedAlignedAndReserved) {
  ClientObject object(kPage);
  SharedMemoryRegistry registry({});
  ASSERT_TRUE(registry.Register(kOwner, "r", object.key(), 0, kPage).ok());
  const float values[4] = {1.5f, -2.0f, 3.25f, 4.0f};
  std::memcpy(object.data() + 1, values, sizeof(values));   // Offset 1: misaligned.
  std::memcpy(object.data() + 64, values, sizeof(values));  // Offset 64: aligned.
  struct Case {
    uint64_t offset;
    bool in_place;
    int64_t item_size;
    bool copied;
  };
  for (const Case& c : {Case{64, true, 4, false}, Case{1, true, 4, true}, Case{1, true, 1, false},
                        Case{64, false, 4, true}}) {
    SCOPED_TRACE(testing::Message() << "offset " << c.offset << ", in place " << c.in_place
                                    << ", item size " << c.item_size);
    std::vector<int64_t> reserved;
    std::vector<SharedMemorySlice> slices;
    Scratch scratch;
    auto data = RegionBytes(
        OwnedRegions(&registry, kOwner), {"r", c.offset, sizeof(values)}, c.in_place, c.item_size,
        "x",
        [&reserved](int64_t n) {
          reserved.push_back(n);
          return absl::OkStatus();
        },
        &slices, &scratch);
    ASSERT_TRUE(data.ok()) << data.status();
    EXPECT_EQ(*data == slices.at(0).data(), !c.copied);
    EXPECT_EQ(reserved, c.copied ? std::vector<int64_t>{sizeof(values)} : std::vector<int64_t>{});
    EXPECT_EQ(scratch.size(), c.copied ? 1u : 0u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(*data) % static_cast<uintptr_t>(c.item_size), 0u);
    EXPECT_EQ(std::memcmp(*data, values, sizeof(values)), 0);
  }
}

// A copy the budget cannot grant is the budget's error, and nothing is kept.
TEST(RegionBytesTest, ARefusedCopyIsTheBudgetsError) {
  ClientObject object(kPage);
  SharedMemoryRegistry registry({});
  ASSERT_TRUE(registry.Register(kOwner, "r", object.key(), 0, kPage).ok());
  std::vector<SharedMemorySlice> slices;
  Scratch scratch;
  auto data = RegionBytes(
      OwnedRegions(&registry, kOwner), {"r", 3, 16}, true, 8, "x",
      [](int64_t) { return absl::ResourceExhaustedError("no budget"); }, &slices, &scratch);
  EXPECT_EQ(data.status(), absl::ResourceExhaustedError("no budget"));
  EXPECT_TRUE(slices.empty());
  EXPECT_TRUE(scratch.empty());
}

}  // namespace
}  // namespace myops::server
