// Asynchronous unary calls (see async_call.h).
#include "async_call.h"

#include <optional>
#include <utility>
#include <vector>

#include <grpcpp/alarm.h>
#include <grpcpp/client_context.h>
#include <grpcpp/support/client_callback.h>

#include "client_core.h"
#include "codec.h"
#include "grpc_status.h"

namespace myops::client::internal {
namespace {

// One call from start to `done`: owns its messages, context and retry alarm, and deletes
// itself after its last callback. Only one gRPC callback of a call runs at a time (the
// next attempt or alarm is started from the previous callback), so it needs no lock; the
// cancellation state it shares with AsyncCall handles has its own.
class AsyncUnaryCall {
 public:
  AsyncUnaryCall(std::shared_ptr<ClientCore> core, const char* method, grpc::ByteBuffer request,
                 Clock::time_point deadline, RawUnaryDone done)
      : core_(std::move(core)),
        method_(method),
        done_(std::move(done)),
        deadline_(deadline),
        request_(std::move(request)),
        cancel_(std::make_shared<AsyncCallState>()) {}

  const std::shared_ptr<AsyncCallState>& cancel_state() const { return cancel_; }

  void StartAttempt() {
    ++attempts_;
    context_ = std::make_shared<grpc::ClientContext>();
    context_->set_deadline(deadline_);
    core_->Authorize(context_.get());
    response_.Clear();
    cancel_->Attach(context_);
    // Nothing of `this` is touched after this line: the callback may already have run.
    core_->generic_stub->UnaryCall(context_.get(), method_, grpc::StubOptions(), &request_,
                                   &response_, [this](grpc::Status status) {
                                     GrpcCallbackScope scope;
                                     OnDone(std::move(status));
                                   });
  }

 private:
  void OnDone(grpc::Status status) {
    cancel_->Detach();
    std::optional<std::chrono::nanoseconds> delay =
        NextRetryDelay(core_->options.retry, attempts_, status.error_code(), deadline_);
    if (!delay || cancel_->cancelled()) {
      Finish(std::move(status));
      return;
    }
    last_status_ = std::move(status);
    alarm_ = std::make_unique<grpc::Alarm>();
    alarm_->Set(Clock::now() + *delay, [this](bool fired) {
      GrpcCallbackScope scope;
      if (fired) {
        StartAttempt();
      } else {
        Finish(last_status_);  // Alarm cancelled (shutdown): report the last failure.
      }
    });
  }

  void Finish(grpc::Status status) {
    RawUnaryDone done = std::move(done_);
    grpc::ByteBuffer response = std::move(response_);
    std::string replica = status.ok() ? ServingReplica(*context_) : "";
    delete this;  // Frees the request before the response is decoded and user code runs.
    done(std::move(status), std::move(response), std::move(replica));
  }

  std::shared_ptr<ClientCore> core_;
  const char* const method_;  // A string constant.
  RawUnaryDone done_;
  const Clock::time_point deadline_;
  const grpc::ByteBuffer request_;  // Shared by the attempts: no re-encoding on retry.
  grpc::ByteBuffer response_;
  const std::shared_ptr<AsyncCallState> cancel_;
  std::shared_ptr<grpc::ClientContext> context_;  // Shared with cancel_ during an attempt.
  std::unique_ptr<grpc::Alarm> alarm_;
  grpc::Status last_status_;
  int attempts_ = 0;
};

}  // namespace

void AsyncCallState::Cancel() {
  std::shared_ptr<grpc::ClientContext> context;
  {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled_ = true;
    context = context_;
  }
  if (context != nullptr) context->TryCancel();
}

void AsyncCallState::Attach(std::shared_ptr<grpc::ClientContext> context) {
  bool cancelled;
  {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled = cancelled_;
    context_ = context;
  }
  // Before the call starts: gRPC remembers it and cancels the call as it starts.
  if (cancelled) context->TryCancel();
}

void AsyncCallState::Detach() {
  std::shared_ptr<grpc::ClientContext> context;
  std::lock_guard<std::mutex> lock(mu_);
  context.swap(context_);  // Destroyed after the unlock (declared before the lock).
}

bool AsyncCallState::cancelled() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cancelled_;
}

std::shared_ptr<AsyncCallState> StartAsyncUnary(std::shared_ptr<ClientCore> core,
                                                const char* method, grpc::ByteBuffer request,
                                                Clock::time_point deadline, RawUnaryDone done) {
  auto* call =
      new AsyncUnaryCall(std::move(core), method, std::move(request), deadline, std::move(done));
  std::shared_ptr<AsyncCallState> state = call->cancel_state();
  call->StartAttempt();  // `call` may be deleted from here on.
  return state;
}

std::shared_ptr<AsyncCallState> StartAsyncScaleShift(std::shared_ptr<ClientCore> core,
                                                     const TensorView& x, double alpha, double beta,
                                                     Client::ScaleShiftCallback done,
                                                     const CallOptions& options) {
  grpc::ByteBuffer request =
      EncodeRequestBytes(x, alpha, beta, options.device, *core->send_buffers);
  const Clock::time_point deadline = CallDeadline(core->options, options);
  return StartAsyncUnary(std::move(core), kScaleShiftMethod, std::move(request), deadline,
                         [dtype = x.dtype, shape = x.shape, done = std::move(done)](
                             grpc::Status status, grpc::ByteBuffer response, std::string replica) {
                           const TensorView expected{dtype, shape, nullptr, 0};
                           absl::StatusOr<ScaleShiftResult> result =
                               status.ok() ? DecodeResponseBytes(response, &expected)
                                           : absl::StatusOr<ScaleShiftResult>(ToAbslStatus(status));
                           if (result.ok()) result->timing.replica = std::move(replica);
                           done(std::move(result));
                         });
}

}  // namespace myops::client::internal
