// Numerics, layouts, variants, autograd and Meta of myops::scale_shift, all through the
// dispatcher path (myops/ops.h) that the server uses.
#include <ATen/ATen.h>
#include <ATen/Version.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

#include <tuple>

#include "myops/ops.h"

namespace {

// Reference in float64, rounded once to the dtype under test.
at::Tensor reference(const at::Tensor& x, double alpha, double beta) {
  return (x.to(at::kDouble) * alpha + beta).to(x.scalar_type());
}

// Tolerances: one rounding in the dtype (plus fma vs double-rounded reference).
std::pair<double, double> tolerance(at::ScalarType t) {
  switch (t) {
    case at::kDouble:
      return {1e-12, 1e-12};
    case at::kFloat:
      return {1e-6, 1e-6};
    case at::kHalf:
      return {1e-3, 1e-3};
    default:
      return {8e-3, 8e-3};  // bfloat16: 8 mantissa bits
  }
}

void expect_matches(const at::Tensor& got, const at::Tensor& x, double alpha, double beta) {
  ASSERT_EQ(got.sizes(), x.sizes());
  ASSERT_EQ(got.scalar_type(), x.scalar_type());
  auto [rtol, atol] = tolerance(x.scalar_type());
  EXPECT_TRUE(
      at::allclose(got.to(at::kDouble), reference(x, alpha, beta).to(at::kDouble), rtol, atol))
      << "max abs diff "
      << (got.to(at::kDouble) - reference(x, alpha, beta).to(at::kDouble))
             .abs()
             .max()
             .item<double>();
}

class ScaleShiftDtype : public ::testing::TestWithParam<at::ScalarType> {
 protected:
  at::Tensor randn(at::IntArrayRef shape) const {
    return at::randn(shape, at::TensorOptions().dtype(GetParam()));
  }
};

TEST_P(ScaleShiftDtype, MatchesReferenceAcrossShapes) {
  // 0-d, tiny, odd sizes (vector tails), 2-D, and large enough to run in parallel.
  const std::vector<std::vector<int64_t>> shapes = {
      {}, {1}, {7}, {33}, {4, 5}, {3, 1, 65}, {(1 << 20) + 13}};
  for (const auto& shape : shapes) {
    at::Tensor x = randn(shape);
    at::Tensor y = myops::scale_shift(x, 2.5, -1.25);
    EXPECT_TRUE(y.is_contiguous());
    expect_matches(y, x, 2.5, -1.25);
  }
}

TEST_P(ScaleShiftDtype, EmptyTensors) {
  for (auto shape : {std::vector<int64_t>{0}, std::vector<int64_t>{3, 0, 2}}) {
    at::Tensor x = randn(shape);
    at::Tensor y = myops::scale_shift(x, 2.0, 1.0);
    EXPECT_EQ(y.sizes(), x.sizes());
    EXPECT_EQ(y.numel(), 0);
    at::Tensor out = at::empty({0}, x.options());
    myops::scale_shift_out(x, 2.0, 1.0, out);
    EXPECT_EQ(out.sizes(), x.sizes());
    myops::scale_shift_(x, 2.0, 1.0);
  }
}

TEST_P(ScaleShiftDtype, NonContiguousInputs) {
  at::Tensor base = randn({64, 48});
  const std::vector<std::pair<const char*, at::Tensor>> views = {
      {"transposed", base.t()},
      {"sliced with steps", base.slice(0, 1, 64, 3).slice(1, 0, 48, 2)},
      {"negative-free narrow", base.narrow(1, 5, 17)},
      {"expanded (stride 0)", base.select(0, 0).unsqueeze(0).expand({9, 48})},
  };
  for (const auto& [name, x] : views) {
    SCOPED_TRACE(name);
    ASSERT_FALSE(x.is_contiguous());
    at::Tensor y = myops::scale_shift(x, -0.5, 3.0);
    EXPECT_TRUE(y.is_contiguous());
    expect_matches(y, x, -0.5, 3.0);
  }
}

// Contiguous tensors take the flat loop, strided ones the TensorIterator loop: both
// round every element the same way (one fused multiply-add where the CPU has one), at
// every length of vector tail and above the parallel grain.
TEST_P(ScaleShiftDtype, ContiguousAndStridedPathsAgreeExactly) {
  if (at::get_cpu_capability() == "DEFAULT") {
    GTEST_SKIP() << "the DEFAULT capability's vector multiply-add is not fused";
  }
  for (int64_t n : {int64_t{1}, int64_t{15}, int64_t{64}, int64_t{257}, int64_t{70000}}) {
    SCOPED_TRACE(n);
    at::Tensor x = randn({n});
    at::Tensor strided = at::empty({n, 2}, x.options()).select(1, 0).copy_(x);
    ASSERT_EQ(strided.is_contiguous(), n == 1);  // one element is contiguous at any stride
    const at::Tensor flat = myops::scale_shift(x, 1.7, -0.3);
    EXPECT_TRUE(at::equal(flat, myops::scale_shift(strided, 1.7, -0.3)));
    at::Tensor in_place = x.clone();
    myops::scale_shift_(in_place, 1.7, -0.3);
    EXPECT_TRUE(at::equal(flat, in_place));
    at::Tensor out = at::empty({n}, x.options());
    myops::scale_shift_out(x, 1.7, -0.3, out);
    EXPECT_TRUE(at::equal(flat, out));
  }
}

TEST_P(ScaleShiftDtype, InPlaceAliasesAndWritesOnlyTheView) {
  at::Tensor base = randn({16, 16});
  const at::Tensor before = base.clone();
  at::Tensor view = base.slice(1, 0, 16, 2);  // every other column
  at::Tensor& r = myops::scale_shift_(view, 3.0, 0.5);
  EXPECT_EQ(&r, &view);
  EXPECT_EQ(r.data_ptr(), view.data_ptr());
  expect_matches(base.slice(1, 0, 16, 2), before.slice(1, 0, 16, 2), 3.0, 0.5);
  EXPECT_TRUE(at::equal(base.slice(1, 1, 16, 2), before.slice(1, 1, 16, 2)));
}

TEST_P(ScaleShiftDtype, OutVariant) {
  at::Tensor x = randn({5, 7});
  at::Tensor out = at::empty({5, 7}, x.options());
  const void* ptr = out.data_ptr();
  at::Tensor& r = myops::scale_shift_out(x, 1.5, 2.0, out);
  EXPECT_EQ(&r, &out);
  EXPECT_EQ(out.data_ptr(), ptr);  // written in place, no reallocation
  expect_matches(out, x, 1.5, 2.0);

  at::Tensor strided = at::empty({7, 5}, x.options()).t();  // non-contiguous out
  myops::scale_shift_out(x, 1.5, 2.0, strided);
  expect_matches(strided, x, 1.5, 2.0);

  at::Tensor resized = at::empty({0}, x.options());  // empty out is resized silently
  myops::scale_shift_out(x, 1.5, 2.0, resized);
  expect_matches(resized, x, 1.5, 2.0);

  at::Tensor same = x.clone();  // out aliasing x entirely is elementwise-safe
  myops::scale_shift_out(same, 1.5, 2.0, same);
  expect_matches(same, x, 1.5, 2.0);
}

INSTANTIATE_TEST_SUITE_P(AllDtypes, ScaleShiftDtype,
                         ::testing::Values(at::kFloat, at::kDouble, at::kHalf, at::kBFloat16),
                         [](const auto& info) { return std::string(c10::toString(info.param)); });

TEST(ScaleShift, ExactForRepresentableValues) {
  at::Tensor x = at::arange(-8, 8, at::kFloat);
  EXPECT_TRUE(at::equal(myops::scale_shift(x, 2.0, 1.0), x * 2 + 1));
  EXPECT_TRUE(at::equal(myops::scale_shift(x.to(at::kBFloat16), 0.5, -1.0),
                        (x * 0.5 - 1).to(at::kBFloat16)));
}

TEST(ScaleShiftAutograd, BackwardIsAlphaTimesGrad) {
  at::Tensor x = at::randn({4, 3}, at::kDouble).set_requires_grad(true);
  at::Tensor y = myops::scale_shift(x, 3.0, 7.0);
  ASSERT_TRUE(y.requires_grad());
  at::Tensor gy = at::randn({4, 3}, at::kDouble);
  auto gx = torch::autograd::grad({y}, {x}, {gy});
  EXPECT_TRUE(at::allclose(gx[0], 3.0 * gy));
}

TEST(ScaleShiftAutograd, DoubleBackward) {
  at::Tensor x = at::randn({6}, at::kDouble).set_requires_grad(true);
  at::Tensor gy = at::randn({6}, at::kDouble).set_requires_grad(true);
  at::Tensor y = myops::scale_shift(x, -2.0, 1.0);
  auto gx = torch::autograd::grad({y}, {x}, {gy}, /*retain_graph=*/true, /*create_graph=*/true);
  ASSERT_TRUE(gx[0].requires_grad());
  auto ggy = torch::autograd::grad({gx[0].sum()}, {gy});
  EXPECT_TRUE(at::allclose(ggy[0], at::full({6}, -2.0, at::kDouble)));
}

TEST(ScaleShiftAutograd, InPlaceOnLeafRequiringGradIsRejected) {
  at::Tensor x = at::randn({3}).set_requires_grad(true);
  EXPECT_THROW(myops::scale_shift_(x, 2.0, 1.0), c10::Error);
}

TEST(ScaleShiftAutograd, InPlaceBumpsVersionCounter) {
  at::Tensor x = at::randn({3});
  const auto v = x._version();
  myops::scale_shift_(x, 2.0, 1.0);
  EXPECT_GT(x._version(), v);
}

TEST(ScaleShiftMeta, ShapesDtypesAndStrides) {
  at::Tensor x = at::empty({3, 5}, at::TensorOptions().device(at::kMeta).dtype(at::kHalf)).t();
  at::Tensor y = myops::scale_shift(x, 2.0, 1.0);
  EXPECT_TRUE(y.is_meta());
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{5, 3}));
  EXPECT_EQ(y.strides(), (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(y.scalar_type(), at::kHalf);

  at::Tensor out = at::empty({0}, y.options());
  myops::scale_shift_out(x, 2.0, 1.0, out);
  EXPECT_EQ(out.sizes(), x.sizes());
  EXPECT_EQ(&myops::scale_shift_(x, 2.0, 1.0), &x);
}

TEST(ScaleShiftRegistry, AllSchemasRegistered) {
  EXPECT_NO_THROW(myops::check_registered());
  const auto schemas = myops::registered_schemas();
  ASSERT_EQ(schemas.size(), 3u);
  EXPECT_EQ(schemas[0], "myops::scale_shift(Tensor x, float alpha, float beta) -> Tensor");
}

}  // namespace
