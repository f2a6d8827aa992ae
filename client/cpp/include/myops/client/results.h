// Results returned by the myops C++ client: the server's timing breakdown, operator
// results (scale_shift and generic calls), stream results, the server description and
// the served operators' schemas. Plain value types mirroring the
// wire messages of proto/myops/v1/myops.proto, without any protobuf dependency.
#ifndef MYOPS_CLIENT_RESULTS_H_
#define MYOPS_CLIENT_RESULTS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "myops/client/tensor.h"
#include "myops/client/value.h"

namespace myops::client {

// Where the server spent the time of one request, in nanoseconds of wall time.
struct Timing {
  int64_t decode_ns = 0;   // Parsing (unary calls) and validating the request.
  int64_t queue_ns = 0;    // Waiting for an executor worker.
  int64_t compute_ns = 0;  // Running the operator (on CUDA: staging copies + H2D, kernel, D2H).
  int64_t encode_ns = 0;   // Preparing the response tensor.
  int64_t total_ns = 0;    // Handler receiving the request -> response ready to send.
  std::string device;      // The device that ran the operator, e.g. "cpu", "cuda:0".
  // The replica that served the call: the server's "myops-replica" response metadata
  // (its --replica-name; by default its host name, in Kubernetes its pod's name). Empty
  // when the server sent none.
  std::string replica;
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

// Outputs of a generic Call: the operator's results in schema order (a Tensor[] return is
// one kTensorList value), each tensor owned; the server's timing; the request's id (0 for
// unary calls, the id Send returned on a stream).
struct CallResult {
  std::vector<Value> outputs;
  Timing timing;
  uint64_t request_id = 0;
};

// One response of a CallStreamSession, as StreamResult.
struct CallStreamResult {
  uint64_t request_id = 0;
  absl::StatusOr<CallResult> result;
};

// How a schema type travels (values equal the wire's myops.v1.ValueKind).
enum class SchemaKind : int32_t {
  kUnspecified = 0,
  kTensor = 1,
  kInt = 2,  // int, SymInt
  kFloat = 3,
  kBool = 4,
  kString = 5,
  kIntList = 6,  // int[], SymInt[], int[N]
  kFloatList = 7,
  kTensorList = 8,
  kScalar = 9,       // Scalar: a kInt, kFloat or kBool value
  kScalarType = 10,  // ScalarType: a DType value
  kOther = 11,       // not expressible on the wire (the op is then not served)
};

// "tensor", "int", ..., "scalar", "dtype", "other"; "unspecified" for unknown values.
absl::string_view SchemaKindName(SchemaKind kind);

// One argument of an operator's schema.
struct ArgumentDescription {
  std::string name;
  std::string type;  // The schema's type, e.g. "Tensor?", "int[2]".
  SchemaKind kind = SchemaKind::kUnspecified;
  bool optional = false;  // Accepts none.
  bool has_default = false;
  std::string default_value;  // The schema's text of the default, e.g. "1", "None".
  bool kwarg_only = false;    // After '*' in the schema: only by name (NamedArg).
};

// One return of an operator's schema.
struct ReturnDescription {
  std::string name;  // Often empty.
  std::string type;
  SchemaKind kind = SchemaKind::kUnspecified;
};

// A served operator, as ListOperators reports it.
struct OperatorDescription {
  std::string name;      // "namespace::name".
  std::string overload;  // "" for the default overload.
  std::string schema;    // As registered in the PyTorch dispatcher.
  std::vector<ArgumentDescription> arguments;
  std::vector<ReturnDescription> returns;
  std::vector<std::string> devices;  // Devices of this server with a kernel ("cpu", "cuda:0").
  bool served = false;               // Whether Call accepts it; else `reason` says why.
  std::string reason;
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
