// Configuration of the myops C++ client: per-client options (ClientOptions, with its
// RetryPolicy and TlsOptions) and per-call options (CallOptions). Plain value types.
#ifndef MYOPS_CLIENT_OPTIONS_H_
#define MYOPS_CLIENT_OPTIONS_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace myops::client {

// Longest deadline or backoff the client accepts (about 31 years): time points this far
// ahead still fit the clocks' 64-bit nanosecond counts.
inline constexpr std::chrono::milliseconds kMaxDeadline{int64_t{1'000'000'000} * 1000};
// Most attempts a RetryPolicy may ask for.
inline constexpr int kMaxAttempts = 1000;

// Retries of calls that fail with UNAVAILABLE (server not reachable, connection lost,
// server shutting down). No other code is retried. Attempt n (n >= 2) waits a random
// time in [0.5, 1.0] * min(initial_backoff * multiplier^(n-2), max_backoff) first; all
// attempts of one call share that call's deadline. Unary calls (ScaleShift,
// ScaleShiftInto, ScaleShiftAsync, Call, CallAsync, ListOperators, ServerInfo, Health) are
// retried; streams are not.
struct RetryPolicy {
  // Attempts in total, including the first; 1 disables retries. In [1, kMaxAttempts].
  int max_attempts = 3;
  // 0 <= initial_backoff <= max_backoff <= kMaxDeadline.
  std::chrono::milliseconds initial_backoff{100};
  std::chrono::milliseconds max_backoff{2000};
  // Growth of the backoff per attempt; finite and >= 1.
  double multiplier = 2.0;
};

// How a client spreads its calls over the addresses its target resolves to (a headless
// Kubernetes Service's pods, "ipv4:10.0.0.1:50051,10.0.0.2:50051", ...).
enum class LoadBalancing {
  // gRPC's round_robin: one connection per address, each call on the next ready one, so
  // every replica gets an even share; an address that fails or (with health checking,
  // ClientOptions::health_checking) reports NOT_SERVING is skipped until it is back.
  kRoundRobin,
  // gRPC's pick_first: one connection, to the first address that answers; every call
  // goes there until it fails.
  kPickFirst,
};

// Transport security. Empty root_ca_pem = plaintext (insecure channel credentials).
struct TlsOptions {
  // PEM root certificates used to verify the server. Empty = no TLS.
  std::string root_ca_pem;
  // For mutual TLS: the client's PEM certificate chain and private key. Both or neither;
  // only with root_ca_pem.
  std::string client_cert_pem;
  std::string client_key_pem;
};

// Whether a Client passes tensors through shared memory. A server on the same host that
// was started with --allow-shared-memory maps POSIX shared memory regions the client
// registers (the Open Inference Protocol's system shared memory extension): the
// tensors of a call then cross no socket, only the call's small request and response do.
// Applies to Call, CallAsync, ScaleShift, ScaleShiftInto, ScaleShiftAsync and
// CallStreamSession::Send (each request's region is its own until its response is
// received); ScaleShiftStream sends its tensors inline. Tensors are copied once into a region of a
// pool that the client reuses across calls, and results once out of it.
enum class SharedMemoryMode {
  // Tensors of shared_memory_min_bytes or more, when the target is this host (a unix
  // socket, localhost or a loopback address) and the server accepts the client's
  // regions; otherwise, or while the pool has no room, inline, silently. The first call
  // that would use it finds out (one registration RPC); a server that refuses (not
  // started with --allow-shared-memory, or one that cannot open the client's regions:
  // another host, container or user) is not asked again by this Client.
  kAuto,
  // Every tensor (with data) of those calls; a call fails when shared memory cannot be
  // used (FAILED_PRECONDITION or UNIMPLEMENTED saying why) or the pool has no room
  // (RESOURCE_EXHAUSTED).
  kOn,
  // Never.
  kOff,
};

// Options of one Client (and its one channel).
struct ClientOptions {
  // gRPC target, e.g. "localhost:50051", "dns:///myops.internal:50051", many replicas
  // "dns:///myops-server-headless.NS.svc.cluster.local:50051" or
  // "ipv4:10.0.0.1:50051,10.0.0.2:50051",
  // "unix:///tmp/myops.sock".
  std::string target = "localhost:50051";
  // Balancing over the target's addresses. The name is resolved again whenever a
  // connection closes (a replica went away, or the server's --max-connection-age sent a
  // GOAWAY), so replicas added or removed behind a DNS name are picked up; gRPC's DNS
  // resolver waits at least "grpc.dns_min_time_between_resolutions_ms" (30 s by default;
  // int_channel_args can lower it) between resolutions. A stream stays on the replica it
  // started on. Retries (RetryPolicy) pick the next ready replica.
  LoadBalancing load_balancing = LoadBalancing::kRoundRobin;
  // With kRoundRobin, each connection watches the server's overall grpc.health.v1 status
  // (service ""); a replica that is not SERVING (a draining one, after SIGTERM) gets no
  // new calls, which go to the other replicas. For targets with many replicas (a
  // headless Service): with one address (a ClusterIP Service, one server) a draining
  // server would fail calls at once instead of serving them during its drain delay. A
  // server without the health service counts as serving; one that answers the health
  // Watch with an error or never answers it gets no calls.
  bool health_checking = false;
  // Deadline of every call that does not set CallOptions::deadline. For a stream it
  // bounds the whole session. In (0, kMaxDeadline].
  std::chrono::milliseconds default_deadline{std::chrono::seconds(30)};
  // Largest request sent, bytes, as encoded (the tensor's data plus its dtype, shape and
  // the call's other fields); a request over it is rejected before sending
  // (InvalidArgumentError). Must be > 0; at most 2 GiB - 1 (gRPC's limit). The receive
  // limit is max_message_bytes + kResponseOverheadBytes (at most 2 GiB - 1), so the
  // response to the largest request, whose output is as large as its input and carries
  // the timing too, fits (a generic Call whose outputs are larger than its inputs needs a
  // larger max_message_bytes, or "grpc.max_receive_message_length" in int_channel_args).
  // gRPC's default receive limit, 4 MiB, does not apply.
  int max_message_bytes = 1 << 30;
  RetryPolicy retry;
  // Request tensors are copied once into send buffers that gRPC owns until the bytes are
  // written; released buffers are kept for reuse (no fresh page faults per request) up
  // to this many bytes in all. 0 frees every buffer after its call. Must be >= 0.
  int64_t max_pooled_send_bytes = int64_t{256} << 20;
  // Shared memory with a server on this host (see SharedMemoryMode).
  SharedMemoryMode shared_memory = SharedMemoryMode::kAuto;
  // kAuto: the smallest tensor that goes to shared memory, bytes; smaller ones travel
  // inline (a registration and a copy cost more than sending them). >= 0.
  int64_t shared_memory_min_bytes = int64_t{64} << 10;
  // The most bytes of shared memory regions the client has at once, in use and pooled;
  // a call that needs more travels inline (kAuto) or fails (kOn). > 0.
  int64_t max_shared_memory_bytes = int64_t{16} << 30;
  // Regions kept for reuse after their call, bytes in all; the rest are unregistered
  // and freed. >= 0.
  int64_t max_pooled_shared_memory_bytes = int64_t{512} << 20;
  // Extra gRPC channel arguments ("grpc.keepalive_time_ms" -> 10000, ...). Applied after
  // the options above, so they can override them.
  std::map<std::string, int> int_channel_args;
  std::map<std::string, std::string> string_channel_args;
  TlsOptions tls;
  // Bearer token sent as "authorization: Bearer <token>" metadata on every call (unary,
  // async, streams, generic calls, ServerInfo, Health), for a server started with
  // --auth-token-file. Empty: none. Visible ASCII only (InvalidArgumentError otherwise).
  // Never logged; send it over TLS, since a plaintext channel exposes it to anyone on the
  // path.
  std::string auth_token;
};

// Slack of the receive limit over ClientOptions::max_message_bytes (see there).
inline constexpr int kResponseOverheadBytes = 4096;

// Options of one call.
struct CallOptions {
  // Overrides ClientOptions::default_deadline for this call (for a stream: the session).
  std::optional<std::chrono::milliseconds> deadline;
  // Where the server runs the operator: "" (server's choice), "cpu", "cuda", "cuda:N".
  std::string device;
  // When the call goes through shared memory (ClientOptions::shared_memory): result
  // tensors the server wrote to the call's region are returned where they are
  // (Tensor::in_shared_memory()) instead of copied out once. The region then stays the
  // result's until the tensor (and every copy of it) is gone, so a caller holding many
  // results holds as many regions (within max_shared_memory_bytes and the server's
  // --shared-memory-max-regions; beyond them kAuto calls go inline).
  bool results_in_shared_memory = false;
};

}  // namespace myops::client

#endif  // MYOPS_CLIENT_OPTIONS_H_
