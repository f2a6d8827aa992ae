// Implements reference.h with libtorch.
#include "reference.h"

#include <ATen/ATen.h>

#include <cstring>

#include "myops/ops.h"
#include "runtime/torch/runner.h"

namespace myops::server::testing {
namespace {

std::string Bytes(const at::Tensor& t) {
  at::Tensor c = t.contiguous();
  return std::string(static_cast<const char*>(c.data_ptr()), c.nbytes());
}

}  // namespace

std::string ReferenceScaleShift(DType dtype, const std::vector<int64_t>& shape,
                                const std::string& bytes, double alpha, double beta) {
  at::Tensor x = at::empty(shape, ToScalarType(dtype));
  if (!bytes.empty()) std::memcpy(x.data_ptr(), bytes.data(), bytes.size());
  return Bytes(myops::scale_shift(x, alpha, beta));
}

bool AllClose(DType dtype, const std::string& a, const std::string& b, double rtol, double atol) {
  if (a.size() != b.size()) return false;
  const auto t = ToScalarType(dtype);
  const int64_t n = static_cast<int64_t>(a.size()) / at::elementSize(t);
  at::Tensor ta = at::empty({n}, t), tb = at::empty({n}, t);
  if (n == 0) return true;
  std::memcpy(ta.data_ptr(), a.data(), a.size());
  std::memcpy(tb.data_ptr(), b.data(), b.size());
  return at::allclose(ta.to(at::kDouble), tb.to(at::kDouble), rtol, atol);
}

std::string RandomTensorBytes(DType dtype, int64_t numel, uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  return Bytes(at::randn({numel}, gen, at::kFloat).to(ToScalarType(dtype)));
}

}  // namespace myops::server::testing
