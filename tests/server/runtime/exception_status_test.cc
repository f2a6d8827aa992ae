// The one mapping from PyTorch exceptions to statuses.
#include "runtime/exception_status.h"

#include <c10/util/Exception.h>
#include <gtest/gtest.h>

#include <new>

namespace myops::server {
namespace {

template <typename Fn>
absl::Status Map(Fn throwing, bool operator_call = false) {
  try {
    throwing();
  } catch (...) {
    return StatusFromException(std::current_exception(), operator_call);
  }
  return absl::OkStatus();
}

TEST(ExceptionStatusTest, MapsEachKind) {
  auto type = Map([] { TORCH_CHECK_TYPE(false, "bad dtype Int"); });
  EXPECT_EQ(type.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(type.message(), "bad dtype Int");
  EXPECT_EQ(Map([] { TORCH_CHECK_VALUE(false, "v"); }).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Map([] { TORCH_CHECK_INDEX(false, "i"); }).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Map([] { TORCH_CHECK_NOT_IMPLEMENTED(false, "n"); }).code(),
            absl::StatusCode::kUnimplemented);
  EXPECT_EQ(Map([] { TORCH_CHECK_WITH(OutOfMemoryError, false, "oom"); }).code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(Map([] { throw std::bad_alloc(); }).code(), absl::StatusCode::kResourceExhausted);
  auto other = Map([] { TORCH_CHECK(false, "boom"); });
  EXPECT_EQ(other.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(other.message(), "boom");  // no C++ backtrace in what clients read
  EXPECT_EQ(Map([] { throw 42; }).code(), absl::StatusCode::kInternal);
}

TEST(ExceptionStatusTest, AKernelsArgumentCheckInAGenericCallIsTheCallersError) {
  auto check = Map([] { TORCH_CHECK(false, "dets should have the same type as scores"); }, true);
  EXPECT_EQ(check.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(check.message(), "dets should have the same type as scores");
  EXPECT_EQ(Map([] { TORCH_CHECK_NOT_IMPLEMENTED(false, "n"); }, true).code(),
            absl::StatusCode::kUnimplemented);
  EXPECT_EQ(Map([] { throw std::runtime_error("bug"); }, true).code(), absl::StatusCode::kInternal);
}

}  // namespace
}  // namespace myops::server
