// CUDA twins of the CPU tests: the CUDA kernels must agree with the CPU kernels for
// every dtype, layout and variant. Skipped when no GPU is present.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "myops/ops.h"

namespace {

class ScaleShiftCuda : public ::testing::TestWithParam<at::ScalarType> {
 protected:
  void SetUp() override {
    if (!at::hasCUDA()) GTEST_SKIP() << "no CUDA device";
  }
  at::Tensor randn_cuda(at::IntArrayRef shape) const {
    return at::randn(shape, at::kFloat).to(GetParam()).to(at::kCUDA);
  }
  // CPU and CUDA both compute in opmath with one rounding; allow one ulp of the dtype.
  void expect_same_as_cpu(const at::Tensor& got, const at::Tensor& x, double a, double b) const {
    ASSERT_TRUE(got.is_cuda());
    at::Tensor want = myops::scale_shift(x.cpu(), a, b);
    const double tol = GetParam() == at::kBFloat16 ? 8e-3 : GetParam() == at::kHalf ? 1e-3 : 1e-6;
    EXPECT_TRUE(at::allclose(got.cpu().to(at::kDouble), want.to(at::kDouble), tol, tol));
  }
};

TEST_P(ScaleShiftCuda, ShapesLayoutsAndAlignment) {
  for (auto shape : {std::vector<int64_t>{}, {1}, {7}, {4097}, {64, 33}, {(1 << 22) + 3}}) {
    at::Tensor x = randn_cuda(shape);
    expect_same_as_cpu(myops::scale_shift(x, 1.5, -2.0), x, 1.5, -2.0);
  }
  at::Tensor base = randn_cuda({128, 96});
  expect_same_as_cpu(myops::scale_shift(base.t(), 2.0, 1.0), base.t(), 2.0, 1.0);
  at::Tensor misaligned = base.flatten().slice(0, 1);  // 16-byte packs not usable
  expect_same_as_cpu(myops::scale_shift(misaligned, 2.0, 1.0), misaligned, 2.0, 1.0);
  at::Tensor empty = randn_cuda({0, 5});
  EXPECT_EQ(myops::scale_shift(empty, 2.0, 1.0).sizes(), empty.sizes());
}

TEST_P(ScaleShiftCuda, InPlaceAndOut) {
  at::Tensor x = randn_cuda({33, 17});
  at::Tensor y = x.clone();
  myops::scale_shift_(y, 3.0, 0.5);
  expect_same_as_cpu(y, x, 3.0, 0.5);
  at::Tensor strided = x.clone().t();  // non-contiguous in-place
  myops::scale_shift_(strided, 3.0, 0.5);
  expect_same_as_cpu(strided, x.t(), 3.0, 0.5);
  at::Tensor out = at::empty({17, 33}, x.options()).t();  // non-contiguous out
  myops::scale_shift_out(x, -1.0, 4.0, out);
  expect_same_as_cpu(out, x, -1.0, 4.0);
}

TEST_P(ScaleShiftCuda, ResultStaysOnTheInputDevice) {
  at::Tensor x = randn_cuda({1024});
  at::Tensor y = myops::scale_shift(x, 2.0, 0.0);
  EXPECT_EQ(y.device(), x.device());
  expect_same_as_cpu(y, x, 2.0, 0.0);
}

// Twins of ScaleShiftErrors' overlap cases: rejected before any kernel writes.
TEST_P(ScaleShiftCuda, OutOverlappingInputIsRejectedAlsoOnceResized) {
  at::Tensor buf = at::arange(8, at::TensorOptions().dtype(GetParam()).device(at::kCUDA));
  const at::Tensor before = buf.clone();
  const std::string msg = "some elements of the input tensor and the written-to tensor refer";
  for (at::Tensor out : {buf.slice(0, 2, 8), buf.slice(0, 2, 2)}) {  // overlapping; empty
    try {
      myops::scale_shift_out(buf.slice(0, 0, 6), 2.0, 1.0, out);
      ADD_FAILURE() << "expected an overlap error for out of size " << out.numel();
    } catch (const c10::Error& e) {
      EXPECT_NE(std::string(e.what_without_backtrace()).find(msg), std::string::npos)
          << e.what_without_backtrace();
    }
  }
  EXPECT_TRUE(at::equal(buf.cpu(), before.cpu()));
}

INSTANTIATE_TEST_SUITE_P(AllDtypes, ScaleShiftCuda,
                         ::testing::Values(at::kFloat, at::kDouble, at::kHalf, at::kBFloat16),
                         [](const auto& info) { return std::string(c10::toString(info.param)); });

}  // namespace
