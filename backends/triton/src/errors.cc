// Status <-> TRITONSERVER_Error (errors.h).
#include "errors.h"

namespace myops::triton {

TRITONSERVER_Error* ToTritonError(const absl::Status& status) {
  if (status.ok()) return nullptr;
  TRITONSERVER_Error_Code code = TRITONSERVER_ERROR_INTERNAL;
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
    case absl::StatusCode::kFailedPrecondition:
      code = TRITONSERVER_ERROR_INVALID_ARG;
      break;
    case absl::StatusCode::kNotFound:
      code = TRITONSERVER_ERROR_NOT_FOUND;
      break;
    case absl::StatusCode::kUnimplemented:
      code = TRITONSERVER_ERROR_UNSUPPORTED;
      break;
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kResourceExhausted:
      code = TRITONSERVER_ERROR_UNAVAILABLE;
      break;
    case absl::StatusCode::kCancelled:
      code = TRITONSERVER_ERROR_CANCELLED;
      break;
    case absl::StatusCode::kAlreadyExists:
      code = TRITONSERVER_ERROR_ALREADY_EXISTS;
      break;
    default:
      break;
  }
  return TRITONSERVER_ErrorNew(code, std::string(status.message()).c_str());
}

absl::Status TakeTritonError(TRITONSERVER_Error* error) {
  if (error == nullptr) return absl::OkStatus();
  absl::StatusCode code = absl::StatusCode::kInternal;
  switch (TRITONSERVER_ErrorCode(error)) {
    case TRITONSERVER_ERROR_INVALID_ARG:
      code = absl::StatusCode::kInvalidArgument;
      break;
    case TRITONSERVER_ERROR_NOT_FOUND:
      code = absl::StatusCode::kNotFound;
      break;
    case TRITONSERVER_ERROR_UNSUPPORTED:
      code = absl::StatusCode::kUnimplemented;
      break;
    case TRITONSERVER_ERROR_UNAVAILABLE:
      code = absl::StatusCode::kUnavailable;
      break;
    case TRITONSERVER_ERROR_CANCELLED:
      code = absl::StatusCode::kCancelled;
      break;
    case TRITONSERVER_ERROR_ALREADY_EXISTS:
      code = absl::StatusCode::kAlreadyExists;
      break;
    default:
      break;
  }
  absl::Status status(code, TRITONSERVER_ErrorMessage(error));
  TRITONSERVER_ErrorDelete(error);
  return status;
}

void Log(TRITONSERVER_LogLevel level, const std::string& message) {
  if (!TRITONSERVER_LogIsEnabled(level)) return;
  TRITONSERVER_Error* e = TRITONSERVER_LogMessage(level, "myops", 0, message.c_str());
  if (e != nullptr) TRITONSERVER_ErrorDelete(e);
}

}  // namespace myops::triton
