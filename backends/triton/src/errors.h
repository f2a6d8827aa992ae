// Errors across the Triton C API boundary: absl::Status (the runtime's) to and from
// TRITONSERVER_Error, and the one place per entry point where C++ exceptions stop
// (Boundary): nothing may unwind into Triton.
#pragma once

#include <exception>
#include <new>
#include <string>

#include "absl/status/status.h"
#include "triton_api.h"

namespace myops::triton {

// A new TRITONSERVER_Error of `status` (null for OK), the caller's to pass on or delete.
// Codes: INVALID_ARGUMENT, OUT_OF_RANGE -> INVALID_ARG; NOT_FOUND; UNIMPLEMENTED ->
// UNSUPPORTED; UNAVAILABLE, RESOURCE_EXHAUSTED -> UNAVAILABLE; CANCELLED; ALREADY_EXISTS;
// FAILED_PRECONDITION -> INVALID_ARG (a model's configuration, a request the model cannot
// serve); anything else INTERNAL.
TRITONSERVER_Error* ToTritonError(const absl::Status& status);

// The status of `error` (OK for null); deletes it.
absl::Status TakeTritonError(TRITONSERVER_Error* error);

// Runs `body` (returning absl::Status) as the body of an entry point: its status, or an
// exception that escaped it, as a TRITONSERVER_Error naming `what`.
template <typename Body>
TRITONSERVER_Error* Boundary(const char* what, Body&& body) noexcept {
  try {
    return ToTritonError(body());
  } catch (const std::bad_alloc&) {
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNAVAILABLE,
                                 (std::string(what) + ": out of memory").c_str());
  } catch (const std::exception& e) {
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL,
                                 (std::string(what) + ": " + e.what()).c_str());
  } catch (...) {
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL,
                                 (std::string(what) + ": unknown exception").c_str());
  }
}

// Logs `message` at `level` through Triton's log.
void Log(TRITONSERVER_LogLevel level, const std::string& message);

}  // namespace myops::triton
