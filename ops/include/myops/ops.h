// The myops C++ API: typed entry points into the PyTorch operator table.
//
// Every function here calls through c10::Dispatcher (typed operator handles looked up
// once), exactly as `torch.ops.myops.*` does from Python, so autograd, Meta, CPU and CUDA
// kernels are selected by the dispatcher. This is the API the server uses.
//
// Semantics (all variants): y = alpha * x + beta, elementwise, computed in x's dtype
// (float16/bfloat16 via float opmath), for float32, float64, float16 and bfloat16.
// Integer, bool and complex tensors are rejected with c10::TypeError.
//
// Thread-safety: all functions are safe to call concurrently (the dispatcher is).
#pragma once

#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

namespace myops {

// Returns a new contiguous tensor with x's shape, dtype and device.
at::Tensor scale_shift(const at::Tensor& x, double alpha, double beta);

// Overwrites x with alpha * x + beta and returns x. x must not have internal overlap.
at::Tensor& scale_shift_(at::Tensor& x, double alpha, double beta);

// Writes alpha * x + beta into `out` and returns it. `out` must have x's dtype and
// device; it is resized to x's shape per ATen's out= rules (a warning is issued when a
// non-empty `out` of another shape is resized). `out` may be non-contiguous.
at::Tensor& scale_shift_out(const at::Tensor& x, double alpha, double beta, at::Tensor& out);

// The schemas of every myops operator, as registered in the dispatcher (for server
// info). Empty when the library's TORCH_LIBRARY block has not been loaded.
std::vector<std::string> registered_schemas();

// Throws c10::Error naming the missing operator unless every operator this API
// calls is registered. Cheap after the first call.
void check_registered();

}  // namespace myops
