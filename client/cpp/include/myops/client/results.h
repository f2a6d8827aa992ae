// Results returned by the myops C++ client: the server's timing breakdown, operator
// results, stream results and the server description. Plain value types mirroring the
// wire messages of proto/myops/v1/myops.proto, without any protobuf dependency.
#ifndef MYOPS_CLIENT_RESULTS_H_
#define MYOPS_CLIENT_RESULTS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "myops/client/tensor.h"

namespace myops::client {

// Where the server spent the time of one request, in nanoseconds of wall time.
struct Timing {
  int64_t decode_ns = 0;   // Parsing (unary calls) and validating the request.
  int64_t queue_ns = 0;    // Waiting for an executor worker.
  int64_t compute_ns = 0;  // Running the operator (on CUDA: staging copies + H2D, kernel, D2H).
  int64_t encode_ns = 0;   // Preparing the response tensor.
  int64_t total_ns = 0;    // Handler receiving the request -> response ready to send.
  std::string device;      // The device that ran the operator, e.g. "cpu", "cuda:0".
};

// Output of scale_shift (alpha * x + beta: x's dtype and shape) and the server's timing.
struct ScaleShiftResult {
  Tensor output;
  Timing timing;
};

// One response of a StreamSession: the id Send returned for the request, and either its
// result or the error the server reported for that request (the stream goes on).
struct StreamResult {
  uint64_t request_id = 0;
  absl::StatusOr<ScaleShiftResult> result;
};

// A device the server computes on.
struct DeviceInfo {
  std::string name;                // "cpu" or "cuda:N".
  std::string description;         // E.g. the GPU's name or the CPU capability in use.
  int64_t total_memory_bytes = 0;  // 0 when not known.
};

// A registered operator.
struct OperatorInfo {
  std::string name;    // Qualified, e.g. "myops::scale_shift".
  std::string schema;  // As registered in the PyTorch dispatcher.
};

// The server's configured limits; requests beyond them are rejected.
struct ServerLimits {
  int64_t max_message_bytes = 0;
  int64_t max_elements = 0;
  int64_t max_inflight = 0;
};

// What the ServerInfo RPC reports.
struct ServerInfo {
  std::string myops_version;
  std::string torch_version;
  std::string cuda_version;  // Empty for a CPU-only build.
  std::vector<DeviceInfo> devices;
  std::vector<OperatorInfo> operators;
  ServerLimits limits;
  int32_t workers = 0;
};

}  // namespace myops::client

#endif  // MYOPS_CLIENT_RESULTS_H_
