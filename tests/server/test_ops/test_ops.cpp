// libmyops_test_ops: an operator library the tests load into myops-server with
// --load-library, as users load theirs. Its operators (namespace myops_test) cover every
// argument and return kind the wire carries, plus the cases the server must refuse or
// route: a mutating op, an op with only a CUDA kernel, an op with an argument type that
// has no wire form, and a gate that holds a call while a test acts. Kernels are small and
// exact so that results can be checked.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

namespace {

// Several tensors, an optional tensor, a kwarg-only default.
at::Tensor add3(const at::Tensor& a, const at::Tensor& b, const std::optional<at::Tensor>& c,
                double alpha) {
  at::Tensor out = a + b * alpha;
  return c.has_value() ? out + *c : out;
}

// A tuple of tensors.
std::tuple<at::Tensor, at::Tensor> minmax(const at::Tensor& x) { return {x.min(), x.max()}; }

// A Tensor[] return from an int argument.
std::vector<at::Tensor> chunks(const at::Tensor& x, int64_t n) { return x.chunk(n); }

// A Tensor[] argument and an int default.
at::Tensor stack_all(at::TensorList xs, int64_t dim) { return at::stack(xs, dim); }

// A Scalar argument and an int return.
int64_t count_above(const at::Tensor& x, const at::Scalar& threshold) {
  return (x > threshold).sum().item<int64_t>();
}

// float[], ScalarType? and a float return.
double weighted_sum(at::ArrayRef<double> weights, std::optional<at::ScalarType> dtype) {
  double s = 0;
  for (size_t i = 0; i < weights.size(); ++i) s += weights[i] * static_cast<double>(i + 1);
  return dtype.has_value() && *dtype == at::kInt ? static_cast<double>(static_cast<int64_t>(s)) : s;
}

// int[2], SymInt, str, bool: a filled tensor and a str return.
at::Tensor filled(at::IntArrayRef size, int64_t fill, c10::SymInt repeat) {
  return at::full({size[0] * repeat.expect_int(), size[1]}, fill, at::kLong);
}
std::string describe(const at::Tensor& x, const std::string& prefix, bool upper) {
  std::string s = prefix + std::to_string(x.dim()) + "d";
  if (upper) {
    for (char& ch : s) ch = static_cast<char>(std::toupper(ch));
  }
  return s;
}

// Tensor? return: None unless asked for.
std::optional<at::Tensor> maybe(const at::Tensor& x, bool give) {
  return give ? std::optional<at::Tensor>(x * 2) : std::nullopt;
}

// The input itself: the server must not send the request's own memory back.
at::Tensor same(const at::Tensor& x) { return x; }

// A bool return and a bool[] result of a comparison.
bool all_positive(const at::Tensor& x) { return (x > 0).all().item<bool>(); }

at::Tensor& bump_(at::Tensor& x) { return x.add_(1); }

at::Tensor gpu_twice(const at::Tensor& x) { return x * 2; }

at::Tensor with_device(const at::Tensor& x, at::Device) { return x; }
// A gate, for tests of what happens while a call runs: creates `dir`/started, waits (30 s
// at most) for `dir`/go, then returns a copy of x read only then.
at::Tensor gated_copy(const at::Tensor& x, const std::string& dir) {
  std::ofstream(dir + "/started").put('1');
  for (int i = 0; i < 30000 && !std::ifstream(dir + "/go").good(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return x.clone();
}

}  // namespace

TORCH_LIBRARY(myops_test, m) {
  m.def("add3(Tensor a, Tensor b, Tensor? c=None, *, float alpha=1.0) -> Tensor");
  m.def("minmax(Tensor x) -> (Tensor min, Tensor max)");
  m.def("chunks(Tensor x, int n) -> Tensor[]");
  m.def("stack_all(Tensor[] xs, int dim=0) -> Tensor");
  m.def("count_above(Tensor x, Scalar threshold) -> int");
  m.def("weighted_sum(float[] weights, ScalarType? dtype=None) -> float");
  m.def("filled(int[2] size, int fill=7, SymInt repeat=1) -> Tensor");
  m.def("describe(Tensor x, str prefix, bool upper=False) -> str");
  m.def("maybe(Tensor x, bool give) -> Tensor?");
  m.def("same(Tensor x) -> Tensor");
  m.def("all_positive(Tensor x) -> bool");
  m.def("bump_(Tensor(a!) x) -> Tensor(a!)");
  m.def("gpu_twice(Tensor x) -> Tensor");
  m.def("with_device(Tensor x, Device device) -> Tensor");
  m.def("gated_copy(Tensor x, str dir) -> Tensor");
}

TORCH_LIBRARY_IMPL(myops_test, CompositeExplicitAutograd, m) {
  m.impl("add3", add3);
  m.impl("minmax", minmax);
  m.impl("chunks", chunks);
  m.impl("stack_all", stack_all);
  m.impl("count_above", count_above);
  m.impl("weighted_sum", weighted_sum);
  m.impl("filled", filled);
  m.impl("describe", describe);
  m.impl("maybe", maybe);
  m.impl("same", same);
  m.impl("all_positive", all_positive);
  m.impl("with_device", with_device);
}

TORCH_LIBRARY_IMPL(myops_test, CPU, m) {
  m.impl("bump_", bump_);
  m.impl("gated_copy", gated_copy);
}

// Only a CUDA kernel (a plain C++ function: the key is all that matters here).
TORCH_LIBRARY_IMPL(myops_test, CUDA, m) { m.impl("gpu_twice", gpu_twice); }
