// HeapInUseBytes: the heap a process's allocations hold, from glibc's count and (the same
// test again with tcmalloc preloaded, see CMakeLists.txt) from tcmalloc's. It grows by
// what is held and comes back when it is freed, unlike RSS with a caching allocator.
#include "util/heap.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>

namespace myops::server {
namespace {

TEST(HeapInUseBytesTest, GrowsByWhatIsHeldAndComesBackWhenItIsFreed) {
  const std::optional<int64_t> before = HeapInUseBytes();
  if (!before.has_value()) GTEST_SKIP() << "this allocator does not count (a sanitizer's)";
  constexpr int64_t kBytes = int64_t{64} << 20;
  auto block = std::make_unique<char[]>(kBytes);
  std::memset(block.get(), 1, kBytes);
  const std::optional<int64_t> held = HeapInUseBytes();
  ASSERT_TRUE(held.has_value());
  EXPECT_GE(*held - *before, kBytes);
  EXPECT_LT(*held - *before, kBytes + (int64_t{1} << 20));
  block.reset();
  const std::optional<int64_t> after = HeapInUseBytes();
  ASSERT_TRUE(after.has_value());
  EXPECT_LT(*after - *before, int64_t{1} << 20);
}

}  // namespace
}  // namespace myops::server
