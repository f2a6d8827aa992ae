// Asynchronous ScaleShift calls (see async_call.h).
#include "async_call.h"

#include <optional>
#include <utility>
#include <vector>

#include <grpcpp/alarm.h>
#include <grpcpp/client_context.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/client_callback.h>

#include "client_core.h"
#include "codec.h"
#include "grpc_status.h"
#include "retry.h"

namespace myops::client::internal {
namespace {

// One call from start to `done`: owns its messages, context and retry alarm, and deletes
// itself after its last callback. Only one gRPC callback of a call runs at a time (the
// next attempt or alarm is started from the previous callback), so it needs no lock.
class AsyncScaleShiftCall {
 public:
  AsyncScaleShiftCall(std::shared_ptr<ClientCore> core, const TensorView& x, double alpha,
                      double beta, Client::ScaleShiftCallback done, const CallOptions& options)
      : core_(std::move(core)),
        done_(std::move(done)),
        deadline_(CallDeadline(core_->options, options)),
        dtype_(x.dtype),
        shape_(x.shape),
        request_(EncodeRequestBytes(x, alpha, beta, options.device, *core_->send_buffers)) {}

  void StartAttempt() {
    ++attempts_;
    context_ = std::make_unique<grpc::ClientContext>();
    context_->set_deadline(deadline_);
    core_->Authorize(context_.get());
    response_.Clear();
    // Nothing of `this` is touched after this line: the callback may already have run.
    grpc::internal::CallbackUnaryCall<grpc::ByteBuffer, grpc::ByteBuffer>(
        core_->channel.get(), *core_->scale_shift, context_.get(), &request_, &response_,
        [this](grpc::Status status) { OnDone(std::move(status)); });
  }

 private:
  void OnDone(grpc::Status status) {
    std::optional<std::chrono::nanoseconds> delay =
        NextRetryDelay(core_->options.retry, attempts_, status.error_code(), deadline_);
    if (!delay) {
      Finish(status);
      return;
    }
    last_status_ = std::move(status);
    alarm_ = std::make_unique<grpc::Alarm>();
    alarm_->Set(Clock::now() + *delay, [this](bool fired) {
      if (fired) {
        StartAttempt();
      } else {
        Finish(last_status_);  // Alarm cancelled (shutdown): report the last failure.
      }
    });
  }

  void Finish(const grpc::Status& status) {
    const TensorView expected{dtype_, shape_, nullptr, 0};
    absl::StatusOr<ScaleShiftResult> result =
        status.ok() ? DecodeResponseBytes(response_, &expected) : ToAbslStatus(status);
    Client::ScaleShiftCallback done = std::move(done_);
    delete this;  // Frees the request before user code runs.
    done(std::move(result));
  }

  std::shared_ptr<ClientCore> core_;
  Client::ScaleShiftCallback done_;
  const Clock::time_point deadline_;
  const DType dtype_;
  const std::vector<int64_t> shape_;
  const grpc::ByteBuffer request_;  // Shared by the attempts: no re-encoding on retry.
  grpc::ByteBuffer response_;
  std::unique_ptr<grpc::ClientContext> context_;
  std::unique_ptr<grpc::Alarm> alarm_;
  grpc::Status last_status_;
  int attempts_ = 0;
};

}  // namespace

void StartAsyncScaleShift(std::shared_ptr<ClientCore> core, const TensorView& x, double alpha,
                          double beta, Client::ScaleShiftCallback done,
                          const CallOptions& options) {
  (new AsyncScaleShiftCall(std::move(core), x, alpha, beta, std::move(done), options))
      ->StartAttempt();
}

}  // namespace myops::client::internal
