// The one mapping from exceptions thrown by PyTorch/myops code to absl::Status.
#pragma once

#include <exception>
#include <utility>

#include "absl/status/status.h"

namespace myops::server {

// c10::TypeError/ValueError/IndexError -> INVALID_ARGUMENT; c10::OutOfMemoryError ->
// RESOURCE_EXHAUSTED; c10::NotImplementedError -> UNIMPLEMENTED; std::bad_alloc ->
// RESOURCE_EXHAUSTED; anything else -> INTERNAL. The message is the exception's text
// without the C++ backtrace.
//
// From a generic call (`operator_call`), a plain c10::Error is INVALID_ARGUMENT: it is
// how kernels check their arguments (TORCH_CHECK: a dtype, a shape), the caller's to
// fix, as the RuntimeError a local call raises. Its more specific kinds map as above.
absl::Status StatusFromException(std::exception_ptr e, bool operator_call = false);

// A status an operator call ends with, thrown from the runtime's own code inside the
// call (an OpCall::memory refusal); StatusFromException returns it as it is.
class CallRefused : public std::exception {
 public:
  explicit CallRefused(absl::Status status) : status_(std::move(status)) {}
  const absl::Status& status() const { return status_; }
  const char* what() const noexcept override { return "the call was refused"; }

 private:
  absl::Status status_;
};

}  // namespace myops::server
