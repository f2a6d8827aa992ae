// The one mapping from exceptions thrown by PyTorch/myops code to absl::Status.
#pragma once

#include <exception>

#include "absl/status/status.h"

namespace myops::server {

// c10::TypeError/ValueError/IndexError -> INVALID_ARGUMENT; c10::OutOfMemoryError ->
// RESOURCE_EXHAUSTED; c10::NotImplementedError -> UNIMPLEMENTED; std::bad_alloc ->
// RESOURCE_EXHAUSTED; anything else -> INTERNAL. The message is the exception's text
// without the C++ backtrace.
absl::Status StatusFromException(std::exception_ptr e);

}  // namespace myops::server
