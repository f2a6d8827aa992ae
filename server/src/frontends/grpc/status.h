// The one conversion from absl::Status to grpc::Status, shared by the gRPC front ends
// (myops.v1 and the Open Inference Protocol's gRPC binding).
#pragma once

#include <string>

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace myops::server {

inline grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

}  // namespace myops::server
