// myops-loadtest's Open Inference Protocol (KServe v2) client (--protocol kserve): gRPC
// ModelInfer of myops::scale_shift with raw_input_contents, built and read by hand as the
// myops.v1 client does ScaleShiftInto, so that the two protocols are compared with the
// same client-side work: the input copied once into a reused send buffer and referenced
// by the request, the output copied once from the response's slices into the caller's
// buffer. Bench code: the generated inference.* messages stay inside kserve_client.cc.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "myops/client/tensor.h"

namespace myops::loadtest {

// How scale_shift's alpha and beta travel: as request parameters (double_param) or as
// 1-element FP64 input tensors (what tools that send only tensors do).
enum class KServeScalars { kParameters, kInputs };

struct KServeOptions {
  std::string target;
  std::string auth_token;  // "" = none
  int channel_id = 0;      // separate channels even to the same target
  int max_message_bytes = 1 << 30;
  KServeScalars scalars = KServeScalars::kParameters;
};

// One channel to a server's inference.GRPCInferenceService. Thread-safe (each concurrent
// caller of Infer passes its own SendBuffer).
class KServeClient {
 public:
  static constexpr char kModel[] = "myops::scale_shift";

  static absl::StatusOr<std::unique_ptr<KServeClient>> Create(const KServeOptions& options);
  ~KServeClient();
  KServeClient(const KServeClient&) = delete;
  KServeClient& operator=(const KServeClient&) = delete;

  // OK when the server's model myops::scale_shift is ready (fails fast on a wrong target).
  absl::Status CheckReady(std::chrono::milliseconds deadline);

  // One caller's send buffer: reused while gRPC no longer holds it (no page faults per
  // request for large tensors), replaced when it still does.
  struct SendBuffer {
    std::shared_ptr<std::string> bytes;
  };

  // scale_shift(x, alpha, beta) by ModelInfer, the output written into `out` (x's dtype
  // and shape). Blocks. An error status from the server, or INTERNAL for a response that
  // does not hold one output of `out`'s size.
  absl::Status Infer(const myops::client::TensorView& x, double alpha, double beta,
                     const myops::client::MutableTensorView& out, SendBuffer* buffer,
                     std::chrono::milliseconds deadline);

  // The same, asynchronously: `done` runs on a gRPC thread with the status; the output is
  // checked and dropped (not copied). `x` is copied before this returns, into `buffer`
  // (as Infer's) or, when it is null, into memory of this call's own.
  void InferAsync(const myops::client::TensorView& x, double alpha, double beta, SendBuffer* buffer,
                  std::function<void(absl::Status)> done, std::chrono::milliseconds deadline);

 private:
  struct Impl;
  explicit KServeClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace myops::loadtest
