// Command-line and environment parsing for myops-server, with CLI11.
#include "config.h"

#include <CLI/CLI.hpp>
#include <sstream>

#include "frontends/grpc/replica_identity.h"
#include "myops/version.h"

namespace myops::server {

namespace {

// CLI11 option `o` with its environment variable `name` and its default shown in --help.
CLI::Option* Env(CLI::Option* o, const char* name) {
  return o->envname(name)->capture_default_str();
}

// Where operators come from and how they run.
void AddExecutorFlags(CLI::App& app, ExecutorOptions* e) {
  auto env = Env;
  env(app.add_option("--devices", e->devices,
                     "auto | cpu | cuda | cuda:N, comma-separated (auto: all GPUs then cpu)"),
      "MYOPS_DEVICES");
  env(app.add_option("--load-library", e->libraries,
                     "Operator library (.so) to load before the operators are listed; "
                     "repeatable (environment: ':'-separated)")
          ->delimiter(':'),
      "MYOPS_LOAD_LIBRARY");
  env(app.add_option("--libpython", e->libpython,
                     "libpython to load for libraries built as Python extensions (default: "
                     "the one of the pythonX.Y in the library's path)"),
      "MYOPS_LIBPYTHON");
  env(app.add_option("--ops", e->ops,
                     "Operators served, comma-separated: namespace::*, namespace::op, "
                     "namespace::op.overload (aten and other built-ins only when named)"),
      "MYOPS_OPS");
  env(app.add_option("--program", e->programs,
                     "NAME=PATH: serve the AOTInductor package PATH (.pt2, made with "
                     "myops.export.package) as model NAME, loaded after the libraries; "
                     "repeatable (environment: ','-separated)")
          ->delimiter(',')
          ->check([](const std::string& text) {
            auto spec = ParseProgramSpec(text);
            return spec.ok() ? std::string() : std::string(spec.status().message());
          }),
      "MYOPS_PROGRAM");
  env(app.add_option("--cpu-workers", e->cpu_workers,
                     "CPU worker threads (0: one per hardware thread)")
          ->check(CLI::NonNegativeNumber),
      "MYOPS_CPU_WORKERS");
  env(app.add_option("--cuda-workers", e->cuda_workers,
                     "Worker threads per GPU, each with its own CUDA stream")
          ->check(CLI::PositiveNumber),
      "MYOPS_CUDA_WORKERS");
  env(app.add_option("--intra-op-threads", e->intra_op_threads,
                     "PyTorch intra-op threads (0: PyTorch's default)")
          ->check(CLI::NonNegativeNumber),
      "MYOPS_INTRA_OP_THREADS");
  env(app.add_option("--inline-max-bytes", e->inline_max_bytes,
                     "CPU requests up to this many bytes run on the gRPC thread (0: never); "
                     "larger unary requests are also parsed on a CPU worker")
          ->check(CLI::NonNegativeNumber),
      "MYOPS_INLINE_MAX_BYTES");
}

// What one request and all of them together may take.
void AddLimitFlags(CLI::App& app, ServiceLimits* l) {
  auto env = Env;
  env(app.add_option("--max-message-bytes", l->max_message_bytes,
                     "Largest request/response message, bytes (<= 2 GiB)")
          ->check(CLI::Range(int64_t{1024}, int64_t{2147483647})),
      "MYOPS_MAX_MESSAGE_BYTES");
  env(app.add_option("--max-elements", l->tensor.max_elements, "Largest tensor, elements")
          ->check(CLI::PositiveNumber),
      "MYOPS_MAX_ELEMENTS");
  env(app.add_option("--max-inflight", l->max_inflight,
                     "Requests processed at once; more get RESOURCE_EXHAUSTED")
          ->check(CLI::PositiveNumber),
      "MYOPS_MAX_INFLIGHT");
  env(app.add_option("--max-inflight-bytes", l->max_inflight_bytes,
                     "Memory budget: bytes held for requests at once (inputs, outputs, "
                     "unsent stream responses); 0: half the container's or machine's memory")
          ->check(CLI::NonNegativeNumber),
      "MYOPS_MAX_INFLIGHT_BYTES");
  env(app.add_option("--max-client-share", l->max_client_share,
                     "The part of the memory budget one client may hold, in (0, 1]: a tenant "
                     "(a token of --auth-token-file), or without tokens a connection; the rest "
                     "stays for the others. 1: no share")
          ->check(CLI::Range(0.001, 1.0)),
      "MYOPS_MAX_CLIENT_SHARE");
  env(app.add_option(
             "--max-streams", l->max_streams,
             "Streaming RPCs (ScaleShiftStream, CallStream, ModelStreamInfer) open at once; "
             "more get RESOURCE_EXHAUSTED")
          ->check(CLI::PositiveNumber),
      "MYOPS_MAX_STREAMS");
  env(app.add_option("--max-concurrent-streams", l->max_concurrent_streams,
                     "RPCs at once on one client connection (HTTP/2 streams)")
          ->check(CLI::Range(int64_t{1}, int64_t{2147483647})),
      "MYOPS_MAX_CONCURRENT_STREAMS");
  env(app.add_option("--http2-window-bytes", l->http2_window_bytes,
                     "HTTP/2 receive window per stream and connection, bytes: what a client "
                     "may send ahead of the server's reads (a stream the server is reading "
                     "may also send the rest of its message)")
          ->check(CLI::Range(int64_t{65535}, int64_t{1} << 30)),
      "MYOPS_HTTP2_WINDOW_BYTES");
  env(app.add_option("--stall-timeout-ms", l->stall_timeout_ms,
                     "A stream holding memory for its client (an unfinished chunked request, "
                     "a response not taken) with no progress for this long is ended")
          ->check(CLI::Range(int64_t{1}, int64_t{86400000})),
      "MYOPS_STALL_TIMEOUT_MS");
}

// Durations in seconds, as the flags take them.
struct Seconds {
  double drain = 1;
  double grace = 30;
  double max_age = 0;
  double max_age_grace = 0;
};

// Shutdown, connection ages and the replica's name.
void AddLifecycleFlags(CLI::App& app, ServerOptions* s, Seconds* seconds) {
  auto env = Env;
  env(app.add_option("--drain-delay", seconds->drain,
                     "Seconds after SIGTERM/SIGINT during which health is NOT_SERVING but "
                     "requests are still accepted (lets requests on the wire arrive)")
          ->check(CLI::NonNegativeNumber),
      "MYOPS_DRAIN_DELAY");
  env(app.add_option("--grace-period", seconds->grace,
                     "Seconds in-flight requests may take to finish after the drain delay")
          ->check(CLI::NonNegativeNumber),
      "MYOPS_GRACE_PERIOD");
  s->replica_name = HostName();
  env(app.add_option("--replica-name", s->replica_name,
                     "Name sent as response metadata \"myops-replica\" on every RPC, so "
                     "balancing clients can tell replicas apart (default: the host name; in "
                     "Kubernetes the pod's); empty: none")
          ->check(CLI::Validator(
              [](std::string& name) -> std::string {
                if (name.size() > 256) return "at most 256 characters";
                for (const char ch : name) {
                  if (ch < 0x20 || ch > 0x7e) return "printable ASCII only";
                }
                return "";
              },
              "TEXT")),
      "MYOPS_REPLICA_NAME");
  env(app.add_option("--max-connection-age", seconds->max_age,
                     "Seconds after which a client connection gets a GOAWAY (+-10% jitter), "
                     "so clients reconnect, re-resolve and spread onto new replicas; 0: never")
          ->check(CLI::Range(0.0, 2147483.0)),
      "MYOPS_MAX_CONNECTION_AGE");
  env(app.add_option("--max-connection-age-grace", seconds->max_age_grace,
                     "Seconds RPCs still open on an aged connection may take before they "
                     "are cancelled; 0: no limit")
          ->check(CLI::Range(0.0, 2147483.0)),
      "MYOPS_MAX_CONNECTION_AGE_GRACE");
}

// Logging, security and the other endpoints.
void AddEndpointFlags(CLI::App& app, Config* c, ServerOptions* s) {
  auto env = Env;
  env(app.add_option("--log-level", c->log_level, "error | warn | info | debug")
          ->check(CLI::IsMember({"error", "warn", "info", "debug"})),
      "MYOPS_LOG_LEVEL");
  env(app.add_option("--tls-cert", s->tls.cert_file, "PEM certificate chain (enables TLS)"),
      "MYOPS_TLS_CERT");
  env(app.add_option("--tls-key", s->tls.key_file, "PEM private key for --tls-cert"),
      "MYOPS_TLS_KEY");
  env(app.add_option("--tls-client-ca", s->tls.client_ca_file,
                     "PEM CA that client certificates must chain to (mutual TLS)"),
      "MYOPS_TLS_CLIENT_CA");
  env(app.add_option("--auth-token-file", s->auth_token_file,
                     "File holding bearer tokens, one per line, one of which every call must "
                     "send as \"authorization: Bearer <token>\": myops.v1 and the Open "
                     "Inference Protocol, gRPC and HTTP/REST; grpc.health.v1, reflection, "
                     "metrics (unless --metrics-auth) and the REST health endpoints stay open "
                     "for probes. Each token is a tenant: the shared memory regions it "
                     "registers are its own"),
      "MYOPS_AUTH_TOKEN_FILE");
  env(app.add_option("--grpc-threads", s->grpc_threads,
                     "Threads that run gRPC's I/O and callbacks (0: one per four hardware "
                     "threads); requests up to --inline-max-bytes also compute on them")
          ->check(CLI::Range(0, 64)),
      "MYOPS_GRPC_THREADS");
  env(app.add_option("--reflection", s->reflection, "Serve gRPC server reflection"),
      "MYOPS_REFLECTION");
  env(app.add_option("--health-address", s->health_address,
                     "Plaintext grpc.health.v1 only, on HOST:PORT (probes when TLS is on)"),
      "MYOPS_HEALTH_ADDRESS");
  env(app.add_option("--http-address", s->http_address,
                     "Open Inference Protocol (KServe v2) HTTP/REST on HOST:PORT (port 0: any "
                     "free port), with the TLS and token of gRPC; empty: off"),
      "MYOPS_HTTP_ADDRESS");
  env(app.add_option("--http-max-connections", s->http_max_connections,
                     "HTTP/REST connections open at once; one more is answered 503 and closed")
          ->check(CLI::Range(1, 1 << 20)),
      "MYOPS_HTTP_MAX_CONNECTIONS");
  env(app.add_option("--http-max-connections-per-address", s->http_max_connections_per_address,
                     "HTTP/REST connections open at once from one client IP address (0: no "
                     "bound); raise it behind a proxy, whose clients share its address")
          ->check(CLI::Range(0, 1 << 20)),
      "MYOPS_HTTP_MAX_CONNECTIONS_PER_ADDRESS");
  env(app.add_flag("--allow-shared-memory", s->shared_memory.allow,
                   "Accept system shared memory (Triton's SystemSharedMemory* RPCs; tensors "
                   "named by region instead of sent): for clients on this host. Any client "
                   "that may call the server can then map POSIX shared memory objects this "
                   "process can open: allow it only with a token, or on a port only trusted "
                   "clients reach"),
      "MYOPS_ALLOW_SHARED_MEMORY");
  env(app.add_option("--shared-memory-max-regions", s->shared_memory.limits.max_regions,
                     "Shared memory regions registered at once, at most")
          ->check(CLI::Range(1, 1 << 20)),
      "MYOPS_SHARED_MEMORY_MAX_REGIONS");
  env(app.add_option("--shared-memory-max-bytes", s->shared_memory.limits.max_total_bytes,
                     "Bytes of all registered regions together, at most (mapped, not "
                     "allocated: the clients' memory)")
          ->check(CLI::PositiveNumber),
      "MYOPS_SHARED_MEMORY_MAX_BYTES");
  env(app.add_option("--metrics-address", s->metrics_address,
                     "Prometheus metrics (GET /metrics) on HOST:PORT; empty: off"),
      "MYOPS_METRICS_ADDRESS");
  env(app.add_flag("--metrics-auth", s->metrics_auth,
                   "Scrapes of /metrics need HTTP Basic authentication whose password is an "
                   "--auth-token-file token (any user name; Prometheus: basic_auth with "
                   "password_file)"),
      "MYOPS_METRICS_AUTH");
  env(app.add_flag("--metrics-tls", s->metrics_tls,
                   "Serve /metrics over HTTPS only, with the --tls-cert/--tls-key of the gRPC "
                   "port (and, with --tls-client-ca, client certificates required; "
                   "Prometheus: scheme https with tls_config)"),
      "MYOPS_METRICS_TLS");
}

std::chrono::milliseconds Millis(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

}  // namespace

ParseResult ParseCommandLine(int argc, char** argv) {
  ParseResult r;
  Config& c = r.config;
  ServerOptions& s = c.server;
  CLI::App app{"myops-server: custom PyTorch operators over gRPC (myops.v1.Myops)"};
  app.set_version_flag("--version", std::string(MYOPS_VERSION_STRING));
  app.get_formatter()->column_width(38);
  Env(app.add_option("--address", s.address, "Listen address HOST:PORT (port 0: any free port)"),
      "MYOPS_ADDRESS");
  AddExecutorFlags(app, &s.executor);
  AddLimitFlags(app, &s.limits);
  Seconds seconds;
  AddLifecycleFlags(app, &s, &seconds);
  AddEndpointFlags(app, &c, &s);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    std::ostringstream out, err;
    r.exit_code = app.exit(e, out, err);
    r.message = out.str() + err.str();
    return r;
  }
  // The tensor byte limit follows the message limit (a tensor must fit in a message).
  s.limits.tensor.max_bytes = s.limits.max_message_bytes;
  c.drain_delay = Millis(seconds.drain);
  c.grace_period = Millis(seconds.grace);
  s.max_connection_age = Millis(seconds.max_age);
  s.max_connection_age_grace = Millis(seconds.max_age_grace);
  return r;
}

}  // namespace myops::server
