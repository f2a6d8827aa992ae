// Deadlines and retries of unary calls (see retry.h).
#include "retry.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <thread>

namespace myops::client::internal {

Clock::time_point CallDeadline(const ClientOptions& client, const CallOptions& call) {
  // A per-call deadline is not validated: clamp it so the time point cannot overflow.
  return Clock::now() + std::min(call.deadline.value_or(client.default_deadline), kMaxDeadline);
}

std::chrono::nanoseconds BaseBackoff(const RetryPolicy& policy, int attempts_made) {
  const double initial = std::chrono::duration<double, std::nano>(policy.initial_backoff).count();
  const double cap = std::chrono::duration<double, std::nano>(policy.max_backoff).count();
  const double backoff =
      std::min(cap, initial * std::pow(policy.multiplier, std::max(0, attempts_made - 1)));
  return std::chrono::nanoseconds(static_cast<int64_t>(std::max(0.0, backoff)));
}

std::optional<std::chrono::nanoseconds> NextRetryDelay(const RetryPolicy& policy, int attempts_made,
                                                       grpc::StatusCode code,
                                                       Clock::time_point deadline) {
  if (code != grpc::StatusCode::UNAVAILABLE || attempts_made >= policy.max_attempts) {
    return std::nullopt;
  }
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::uniform_real_distribution<double> jitter(0.5, 1.0);
  const auto delay = std::chrono::nanoseconds(static_cast<int64_t>(
      static_cast<double>(BaseBackoff(policy, attempts_made).count()) * jitter(rng)));
  if (Clock::now() + delay >= deadline) return std::nullopt;
  return delay;
}

grpc::Status CallWithRetries(const RetryPolicy& policy, Clock::time_point deadline,
                             const std::function<grpc::Status(grpc::ClientContext*)>& attempt) {
  for (int attempts_made = 1;; ++attempts_made) {
    grpc::ClientContext context;
    context.set_deadline(deadline);
    grpc::Status status = attempt(&context);
    std::optional<std::chrono::nanoseconds> delay =
        NextRetryDelay(policy, attempts_made, status.error_code(), deadline);
    if (!delay) return status;
    std::this_thread::sleep_for(*delay);
  }
}

}  // namespace myops::client::internal
