// Deadlines and the retry loop of unary calls: which failures are retried (UNAVAILABLE
// only) and how long to wait before the next attempt (jittered exponential backoff).
#ifndef MYOPS_CLIENT_SRC_RETRY_H_
#define MYOPS_CLIENT_SRC_RETRY_H_

#include <chrono>
#include <functional>
#include <optional>

#include <grpcpp/client_context.h>
#include <grpcpp/support/status.h>

#include "myops/client/options.h"

namespace myops::client::internal {

// gRPC deadlines are absolute system_clock time points.
using Clock = std::chrono::system_clock;

// Now + the call's deadline (CallOptions::deadline, else ClientOptions::default_deadline),
// the deadline at most kMaxDeadline.
Clock::time_point CallDeadline(const ClientOptions& client, const CallOptions& call);

// Backoff before attempt `attempts_made + 1`, before jitter:
// min(initial_backoff * multiplier^(attempts_made - 1), max_backoff). attempts_made >= 1.
std::chrono::nanoseconds BaseBackoff(const RetryPolicy& policy, int attempts_made);

// How long to wait before the next attempt after `attempts_made` attempts whose last one
// ended with `code`; nullopt when the call must not be retried: code is not UNAVAILABLE,
// attempts are used up, or the wait would reach the deadline. The wait is drawn uniformly
// from [0.5, 1.0] * BaseBackoff (thread-safe).
std::optional<std::chrono::nanoseconds> NextRetryDelay(const RetryPolicy& policy, int attempts_made,
                                                       grpc::StatusCode code,
                                                       Clock::time_point deadline);

// Runs `attempt` with a fresh ClientContext whose deadline is `deadline` until it returns
// a status that is not retried (NextRetryDelay), sleeping in between; returns that status.
grpc::Status CallWithRetries(const RetryPolicy& policy, Clock::time_point deadline,
                             const std::function<grpc::Status(grpc::ClientContext*)>& attempt);

}  // namespace myops::client::internal

#endif  // MYOPS_CLIENT_SRC_RETRY_H_
