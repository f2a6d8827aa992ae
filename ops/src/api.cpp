// Implements ops.h: typed dispatcher handles for the myops operators.
#include "myops/ops.h"

#include <algorithm>

#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/util/Exception.h>

namespace myops {
namespace {

template <typename Signature>
c10::TypedOperatorHandle<Signature> typed_handle(const char* name, const char* overload) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, overload).typed<Signature>();
}

// Looked up on first use (function-local statics: thread-safe initialization).
const auto& functional_op() {
  static const auto op =
      typed_handle<at::Tensor(const at::Tensor&, double, double)>("myops::scale_shift", "");
  return op;
}
const auto& inplace_op() {
  static const auto op =
      typed_handle<at::Tensor&(at::Tensor&, double, double)>("myops::scale_shift_", "");
  return op;
}
const auto& out_op() {
  static const auto op = typed_handle<at::Tensor&(const at::Tensor&, double, double, at::Tensor&)>(
      "myops::scale_shift", "out");
  return op;
}

}  // namespace

at::Tensor scale_shift(const at::Tensor& x, double alpha, double beta) {
  return functional_op().call(x, alpha, beta);
}

at::Tensor& scale_shift_(at::Tensor& x, double alpha, double beta) {
  return inplace_op().call(x, alpha, beta);
}

at::Tensor& scale_shift_out(const at::Tensor& x, double alpha, double beta, at::Tensor& out) {
  return out_op().call(x, alpha, beta, out);
}

std::vector<std::string> registered_schemas() {
  std::vector<std::string> schemas;
  for (const auto& name : c10::Dispatcher::singleton().getAllOpNames()) {
    if (name.name.rfind("myops::", 0) != 0) continue;
    auto handle = c10::Dispatcher::singleton().findOp(name);
    if (handle && handle->hasSchema()) schemas.push_back(c10::toString(handle->schema()));
  }
  std::sort(schemas.begin(), schemas.end());
  return schemas;
}

void check_registered() {
  functional_op();
  inplace_op();
  out_op();
}

}  // namespace myops
