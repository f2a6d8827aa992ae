// Options validation and channel construction (see client_core.h).
#include "client_core.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <thread>
#include <utility>

#include <grpc/grpc.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/channel_arguments.h>

#include "absl/strings/str_cat.h"
#include "health.h"

namespace myops::client::internal {
namespace {

thread_local bool in_grpc_callback = false;

// The deleter of every ClientCore (see GrpcCallbackScope).
void DestroyClientCore(ClientCore* core) {
  if (!GrpcCallbackScope::active()) {
    delete core;
    return;
  }
  std::thread([core] { delete core; }).detach();
}

}  // namespace

GrpcCallbackScope::GrpcCallbackScope() : outer_(!in_grpc_callback) { in_grpc_callback = true; }

GrpcCallbackScope::~GrpcCallbackScope() {
  if (outer_) in_grpc_callback = false;
}

bool GrpcCallbackScope::active() { return in_grpc_callback; }

absl::Status ValidateClientOptions(const ClientOptions& options) {
  auto invalid = [](auto&&... parts) {
    return absl::InvalidArgumentError(absl::StrCat("ClientOptions.", parts...));
  };
  if (options.target.empty()) return invalid("target is empty; expected e.g. \"host:50051\"");
  if (options.default_deadline.count() <= 0 || options.default_deadline > kMaxDeadline) {
    return invalid("default_deadline is ", options.default_deadline.count(),
                   " ms; expected in [1, ", kMaxDeadline.count(), "] ms");
  }
  if (options.max_message_bytes <= 0) {
    return invalid("max_message_bytes is ", options.max_message_bytes, "; expected > 0");
  }
  if (options.max_pooled_send_bytes < 0) {
    return invalid("max_pooled_send_bytes is ", options.max_pooled_send_bytes, "; expected >= 0");
  }
  if (options.shared_memory != SharedMemoryMode::kAuto &&
      options.shared_memory != SharedMemoryMode::kOn &&
      options.shared_memory != SharedMemoryMode::kOff) {
    return invalid("shared_memory is ", static_cast<int>(options.shared_memory),
                   "; expected kAuto, kOn or kOff");
  }
  if (options.shared_memory_min_bytes < 0) {
    return invalid("shared_memory_min_bytes is ", options.shared_memory_min_bytes,
                   "; expected >= 0");
  }
  if (options.max_shared_memory_bytes <= 0) {
    return invalid("max_shared_memory_bytes is ", options.max_shared_memory_bytes,
                   "; expected > 0");
  }
  if (options.max_pooled_shared_memory_bytes < 0) {
    return invalid("max_pooled_shared_memory_bytes is ", options.max_pooled_shared_memory_bytes,
                   "; expected >= 0");
  }
  const RetryPolicy& retry = options.retry;
  if (retry.max_attempts < 1 || retry.max_attempts > kMaxAttempts) {
    return invalid("retry.max_attempts is ", retry.max_attempts, "; expected in [1, ", kMaxAttempts,
                   "]");
  }
  if (retry.initial_backoff.count() < 0 || retry.max_backoff < retry.initial_backoff ||
      retry.max_backoff > kMaxDeadline) {
    return invalid("retry backoffs are initial ", retry.initial_backoff.count(), " ms, max ",
                   retry.max_backoff.count(),
                   " ms; expected 0 <= initial <= max <= ", kMaxDeadline.count(), " ms");
  }
  if (!(retry.multiplier >= 1.0) || !std::isfinite(retry.multiplier)) {
    return invalid("retry.multiplier is ", retry.multiplier, "; expected finite and >= 1");
  }
  for (const char c : options.auth_token) {
    if (c < 0x21 || c > 0x7e) {  // Never echo the token itself.
      return invalid("auth_token has a character that is not visible ASCII (",
                     static_cast<int>(static_cast<unsigned char>(c)),
                     "); expected characters 0x21..0x7e");
    }
  }
  if (options.load_balancing != LoadBalancing::kRoundRobin &&
      options.load_balancing != LoadBalancing::kPickFirst) {
    return invalid("load_balancing is ", static_cast<int>(options.load_balancing),
                   "; expected kRoundRobin or kPickFirst");
  }
  const TlsOptions& tls = options.tls;
  if (tls.client_cert_pem.empty() != tls.client_key_pem.empty()) {
    return invalid(
        "tls has only one of client_cert_pem and client_key_pem; expected both "
        "or neither");
  }
  if (tls.root_ca_pem.empty() && !tls.client_cert_pem.empty()) {
    return invalid(
        "tls has a client certificate but no root_ca_pem; expected root_ca_pem "
        "for TLS");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<ClientCore>> CreateClientCore(ClientOptions options) {
  if (absl::Status status = ValidateClientOptions(options); !status.ok()) return status;

  std::shared_ptr<grpc::ChannelCredentials> credentials;
  if (options.tls.root_ca_pem.empty()) {
    credentials = grpc::InsecureChannelCredentials();
  } else {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = options.tls.root_ca_pem;
    ssl.pem_private_key = options.tls.client_key_pem;
    ssl.pem_cert_chain = options.tls.client_cert_pem;
    credentials = grpc::SslCredentials(ssl);
  }
  // gRPC takes the first value of a repeated argument, so the caller's come first and
  // the message limits are set only where the caller did not set them.
  grpc::ChannelArguments args;
  for (const auto& [key, value] : options.int_channel_args) args.SetInt(key, value);
  for (const auto& [key, value] : options.string_channel_args) args.SetString(key, value);
  if (options.string_channel_args.count(GRPC_ARG_SERVICE_CONFIG) == 0) {
    args.SetServiceConfigJSON(ServiceConfigJson(options));
  }
  if (options.int_channel_args.count(GRPC_ARG_MAX_SEND_MESSAGE_LENGTH) == 0) {
    args.SetMaxSendMessageSize(options.max_message_bytes);
  }
  if (options.int_channel_args.count(GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH) == 0) {
    args.SetMaxReceiveMessageSize(static_cast<int>(
        std::min<int64_t>(int64_t{options.max_message_bytes} + kResponseOverheadBytes,
                          std::numeric_limits<int>::max())));
  }

  std::shared_ptr<ClientCore> core(new ClientCore, DestroyClientCore);
  core->channel = grpc::CreateCustomChannel(options.target, credentials, args);
  if (core->channel == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("could not create a channel to \"", options.target, "\""));
  }
  core->stub = myops::v1::Myops::NewStub(core->channel);
  core->generic_stub = std::make_unique<grpc::GenericStub>(core->channel);
  core->send_buffers = SendBufferPool::Create(static_cast<size_t>(options.max_pooled_send_bytes));
  if (!options.auth_token.empty()) {
    core->authorization = "Bearer " + options.auth_token;
  }
  if (options.shared_memory != SharedMemoryMode::kOff) {
    core->shm = ShmPool::Create(core->channel, options,
                                [authorization = core->authorization](grpc::ClientContext* c) {
                                  if (!authorization.empty())
                                    c->AddMetadata("authorization", authorization);
                                });
  }
  core->options = std::move(options);
  return core;
}

std::string ServiceConfigJson(const ClientOptions& options) {
  if (options.load_balancing == LoadBalancing::kPickFirst) {
    return R"({"loadBalancingConfig":[{"pick_first":{}}]})";
  }
  // Health of service "": the server as a whole (myops-server flips it on SIGTERM).
  return options.health_checking ? R"({"loadBalancingConfig":[{"round_robin":{}}],)"
                                   R"("healthCheckConfig":{"serviceName":""}})"
                                 : R"({"loadBalancingConfig":[{"round_robin":{}}]})";
}

std::string ServingReplica(const grpc::ClientContext& context) {
  const auto& metadata = context.GetServerInitialMetadata();
  const auto found = metadata.find(kReplicaMetadataKey);
  if (found == metadata.end()) return "";
  return std::string(found->second.data(), found->second.size());
}

void ClientCore::Authorize(grpc::ClientContext* context) const {
  if (!authorization.empty()) context->AddMetadata("authorization", authorization);
}

}  // namespace myops::client::internal
