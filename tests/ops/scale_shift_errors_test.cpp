// Every rejected input of myops::scale_shift: the exception type the server maps to a
// gRPC status, and the message a user reads.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <functional>

#include "myops/ops.h"

namespace {

template <typename E>
void expect_error(const std::function<void()>& fn, const std::string& fragment) {
  try {
    fn();
    ADD_FAILURE() << "expected an exception containing: " << fragment;
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what_without_backtrace()).find(fragment), std::string::npos)
        << "message was: " << e.what_without_backtrace();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type; message: " << e.what();
  }
}

class UnsupportedDtype : public ::testing::TestWithParam<at::ScalarType> {};

TEST_P(UnsupportedDtype, RejectedByEveryVariantWithTypeError) {
  at::Tensor x = at::ones({4}, at::TensorOptions().dtype(GetParam()));
  const std::string msg = std::string("unsupported dtype ") + c10::toString(GetParam()) +
                          " for 'x'; expected one of Float, Double, Half, BFloat16";
  expect_error<c10::TypeError>([&] { myops::scale_shift(x, 1.0, 0.0); }, msg);
  expect_error<c10::TypeError>([&] { myops::scale_shift_(x, 1.0, 0.0); }, msg);
  at::Tensor out = at::empty_like(x);
  expect_error<c10::TypeError>([&] { myops::scale_shift_out(x, 1.0, 0.0, out); }, msg);
  at::Tensor meta = at::empty({4}, x.options().device(at::kMeta));
  expect_error<c10::TypeError>([&] { myops::scale_shift(meta, 1.0, 0.0); }, msg);
}

INSTANTIATE_TEST_SUITE_P(IntegerBoolComplex, UnsupportedDtype,
                         ::testing::Values(at::kInt, at::kLong, at::kByte, at::kShort, at::kBool,
                                           at::kComplexFloat, at::kComplexDouble),
                         [](const auto& info) { return std::string(c10::toString(info.param)); });

TEST(ScaleShiftErrors, OutDtypeMismatch) {
  at::Tensor x = at::ones({4});
  at::Tensor out = at::empty({4}, at::kDouble);
  expect_error<c10::TypeError>([&] { myops::scale_shift_out(x, 1.0, 0.0, out); },
                               "'out' has dtype Double but 'x' has dtype Float; they must match");
}

TEST(ScaleShiftErrors, OutOnAnotherDevice) {
  at::Tensor x = at::empty({4}, at::TensorOptions().device(at::kMeta));
  at::Tensor out = at::empty({4});
  expect_error<c10::ValueError>([&] { myops::scale_shift_out(x, 1.0, 0.0, out); },
                                "'out' is on cpu but 'x' is on meta");
}

TEST(ScaleShiftErrors, CpuOutForCudaInput) {
  if (!at::hasCUDA()) GTEST_SKIP() << "no CUDA device";
  at::Tensor x = at::ones({4}, at::TensorOptions().device(at::kCUDA));
  at::Tensor out = at::empty({4});
  expect_error<c10::ValueError>([&] { myops::scale_shift_out(x, 1.0, 0.0, out); },
                                "'out' is on cpu but 'x' is on cuda:0");
}

TEST(ScaleShiftErrors, OutPartiallyOverlappingInput) {
  at::Tensor buf = at::ones({8});
  at::Tensor x = buf.slice(0, 0, 6);
  at::Tensor out = buf.slice(0, 2, 8);
  expect_error<c10::Error>([&] { myops::scale_shift_out(x, 1.0, 0.0, out); },
                           "some elements of the input tensor and the written-to tensor refer");
}

// An empty `out` is resized to x's shape in place: base[2:2] grows into base[2:8], which
// overlaps x = base[0:6]. The check must see the resized tensor.
TEST(ScaleShiftErrors, EmptyOutThatOverlapsInputOnceResized) {
  at::Tensor buf = at::arange(8, at::kFloat);
  const at::Tensor before = buf.clone();
  at::Tensor x = buf.slice(0, 0, 6);
  at::Tensor out = buf.slice(0, 2, 2);
  expect_error<c10::Error>([&] { myops::scale_shift_out(x, 2.0, 1.0, out); },
                           "some elements of the input tensor and the written-to tensor refer");
  EXPECT_TRUE(at::equal(buf, before));
}

TEST(ScaleShiftErrors, InPlaceOnInternallyOverlappingTensor) {
  at::Tensor x = at::ones({1, 4}).expand({3, 4});
  expect_error<c10::Error>([&] { myops::scale_shift_(x, 1.0, 0.0); }, "single memory location");
}

}  // namespace
