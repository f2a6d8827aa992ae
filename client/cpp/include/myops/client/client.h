// The myops C++ client: calls the myops.v1.Myops service over one reused gRPC channel,
// synchronously, asynchronously or pipelined on a stream: any served operator by name
// (Call, with Values; ListOperators describes them) or the typed scale_shift (y = alpha *
// x + beta); and queries the server's description and health.
//
//   myops::client::ClientOptions options;
//   options.target = "localhost:50051";
//   absl::StatusOr<std::unique_ptr<myops::client::Client>> client =
//       myops::client::Client::Create(options);
//   if (!client.ok()) return client.status();
//   absl::StatusOr<myops::client::ScaleShiftResult> y = (*client)->ScaleShift(x, 2.0, 1.0);
//   absl::StatusOr<myops::client::CallResult> r =
//       (*client)->Call("myops::scale_shift", {x, 2.0}, {{"beta", 1.0}});
//
// Every call has a deadline (CallOptions::deadline, else ClientOptions::default_deadline)
// and every error is an absl::Status with the gRPC status code and message of the failure;
// inputs are validated before anything is sent (InvalidArgumentError).
#ifndef MYOPS_CLIENT_CLIENT_H_
#define MYOPS_CLIENT_CLIENT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "myops/client/options.h"
#include "myops/client/results.h"
#include "myops/client/tensor.h"
#include "myops/client/value.h"

namespace myops::client {

namespace internal {
struct ClientCore;
class AsyncCallState;
}  // namespace internal

class StreamSession;
class CallStreamSession;

// A handle on one asynchronous call (Client::ScaleShiftAsync, CallAsync, ...) to cancel
// it. Cheap to copy (copies share the call's cancellation state). Thread-safe: Cancel may
// be called from any thread, any number of times, before, during or after the call's
// callback runs. Holding a handle keeps neither the call, nor the client, nor the channel
// alive, and dropping it does not cancel the call. A default-constructed handle refers to
// no call.
class AsyncCall {
 public:
  AsyncCall() = default;

  // Asks the call to end with CANCELLED (grpc::ClientContext::TryCancel of the attempt in
  // flight; no further attempt when it is waiting to retry, which ends the call with
  // CANCELLED once the backoff has passed). The callback still runs exactly once: with
  // CANCELLED when the cancellation came first, else with the call's own result. It may
  // run on the calling thread before Cancel returns: do not call Cancel while holding a
  // lock the callback takes.
  void Cancel() const;

 private:
  friend class Client;
  explicit AsyncCall(std::shared_ptr<internal::AsyncCallState> state);

  std::shared_ptr<internal::AsyncCallState> state_;
};

// A client of one myops server (or load-balanced target).
//
// Thread-safe: all methods may be called concurrently from any number of threads; they
// share one gRPC channel. Create one Client per target and reuse it. Owns its channel;
// asynchronous calls keep the channel alive, so a Client may be destroyed while they are
// in flight (their callbacks still run). StreamSessions also keep it alive.
class Client {
 public:
  using ScaleShiftCallback = std::function<void(absl::StatusOr<ScaleShiftResult>)>;
  using CallCallback = std::function<void(absl::StatusOr<CallResult>)>;
  using OperatorsCallback = std::function<void(absl::StatusOr<std::vector<OperatorDescription>>)>;
  using ServerInfoCallback = std::function<void(absl::StatusOr<ServerInfo>)>;
  using HealthCallback = std::function<void(absl::StatusOr<bool>)>;

  // Validates `options` (InvalidArgumentError naming the bad field) and creates the
  // channel. Does not connect: the first call does, so an unreachable server shows up as
  // UNAVAILABLE from that call (after the retries of options.retry).
  static absl::StatusOr<std::unique_ptr<Client>> Create(ClientOptions options);

  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;
  ~Client();

  // alpha * x + beta, with the server's timing. `x` is only read during the call.
  // InternalError when the server's output is malformed or not of x's dtype and shape.
  absl::StatusOr<ScaleShiftResult> ScaleShift(const TensorView& x, double alpha, double beta,
                                              const CallOptions& options = {});

  // As ScaleShift, but writes the output into `out`, which must have x's dtype and shape
  // and a buffer of x's size (InvalidArgumentError otherwise, before sending). x is copied
  // once, into a pooled send buffer (ClientOptions::max_pooled_send_bytes), and the output
  // once, from the received bytes straight into `out`, so a loop of calls allocates no
  // tensors. `out` may be x's own buffer (in place). `out` is unspecified on error.
  absl::StatusOr<Timing> ScaleShiftInto(const TensorView& x, double alpha, double beta,
                                        const MutableTensorView& out,
                                        const CallOptions& options = {});

  // Starts ScaleShift without blocking. x's bytes are copied into the request before this
  // returns, so the caller may reuse or free them at once. `done` is called exactly once:
  // on a gRPC thread with the result, or on the calling thread, before this returns, when
  // the input is invalid. `done` must not block for long (it holds a gRPC thread). The
  // returned handle cancels the call.
  AsyncCall ScaleShiftAsync(const TensorView& x, double alpha, double beta, ScaleShiftCallback done,
                            const CallOptions& options = {});

  // Opens a ScaleShiftStream session for pipelined calls. The session's deadline
  // (options.deadline, else the client default) bounds the whole session;
  // options.device applies to every request. Streams are not retried.
  absl::StatusOr<std::unique_ptr<StreamSession>> OpenStream(const CallOptions& options = {});

  // Calls the served operator `op` ("namespace::name" or "namespace::name.overload") with
  // positional `args` followed by keyword `kwargs` (arguments left out take the schema's
  // defaults). Tensor data is copied once, into a pooled send buffer, and each output
  // tensor's data once, out of the received bytes. Borrowed tensors are only read during
  // the call. Before sending, InvalidArgumentError names the argument (by name, or by
  // position counted from 1) when a tensor is not self-consistent (ValidateTensorView), a
  // dtype is unknown, a keyword is empty or given twice, `op` is empty, or the request
  // exceeds ClientOptions::max_message_bytes (a CallStreamSession sends larger requests,
  // in chunks); the server reports the rest (unknown op,
  // wrong arity or kind, ...: INVALID_ARGUMENT naming the argument). Retried as
  // ScaleShift is. InternalError when the server's response is malformed.
  absl::StatusOr<CallResult> Call(absl::string_view op, absl::Span<const Value> args,
                                  absl::Span<const NamedArg> kwargs = {},
                                  const CallOptions& options = {});

  // Starts Call without blocking, as ScaleShiftAsync: the arguments are copied into the
  // request before this returns; `done` runs exactly once, on a gRPC thread, or on the
  // calling thread before this returns when the arguments are invalid. The returned handle
  // cancels the call.
  AsyncCall CallAsync(absl::string_view op, absl::Span<const Value> args,
                      absl::Span<const NamedArg> kwargs, CallCallback done,
                      const CallOptions& options = {});

  // Opens a CallStream session for pipelined Calls, as OpenStream.
  absl::StatusOr<std::unique_ptr<CallStreamSession>> OpenCallStream(
      const CallOptions& options = {});

  // The operators the server was asked to serve (its --ops patterns), sorted by name and
  // overload, with schemas, argument kinds and devices; not-served ones say why.
  absl::StatusOr<std::vector<OperatorDescription>> ListOperators(const CallOptions& options = {});
  AsyncCall ListOperatorsAsync(OperatorsCallback done, const CallOptions& options = {});

  // The server's versions, devices, operators, limits and worker count.
  absl::StatusOr<ServerInfo> GetServerInfo(const CallOptions& options = {});
  AsyncCall GetServerInfoAsync(ServerInfoCallback done, const CallOptions& options = {});

  // Standard gRPC health check (grpc.health.v1.Health/Check) of `service` ("" = the
  // server as a whole). true when SERVING, false when NOT_SERVING or UNKNOWN; an error
  // when the call fails (NOT_FOUND for a service the server does not know).
  absl::StatusOr<bool> Health(const std::string& service = "", const CallOptions& options = {});

  // ListOperators, GetServerInfo and Health without blocking: `done` runs exactly once, on
  // a gRPC thread, as ScaleShiftAsync's; the returned handle cancels the call.
  AsyncCall HealthAsync(const std::string& service, HealthCallback done,
                        const CallOptions& options = {});

  const ClientOptions& options() const;

 private:
  explicit Client(std::shared_ptr<internal::ClientCore> core);

  std::shared_ptr<internal::ClientCore> core_;
};

// One ScaleShiftStream RPC: send many requests without waiting, receive their results as
// they come (possibly out of order; match them by request id).
//
// Thread-safety: Send may be called from several threads (sends are serialized), Receive
// likewise (receives are serialized), and Send and Receive may run at the same time (the
// usual pattern: one thread sends, another receives). CloseSend and Close may be called
// from any thread. Owns its gRPC call; destroying an open session cancels the call and
// waits for it to end. The session keeps the Client's channel alive.
//
// Flow control: Send blocks while gRPC flow control holds its write. The server processes
// a bounded number of a stream's requests at a time and stops reading requests while
// their responses wait to be received, so sending more than a few dozen requests (or
// more than the transport's window of bytes) without calling Receive blocks Send until
// responses are received, or until the session's deadline: Send then returns
// DeadlineExceededError saying how many responses were not received. Pipelines larger
// than that must receive on another thread while sending.
class StreamSession {
 public:
  class Impl;

  StreamSession(const StreamSession&) = delete;
  StreamSession& operator=(const StreamSession&) = delete;
  ~StreamSession();

  // Validates x (InvalidArgumentError; the stream goes on), copies it into a request and
  // writes it; returns the request's id (1, 2, 3, ... in send order). Blocks only while
  // gRPC flow control holds the write (see "Flow control" above): DeadlineExceededError
  // when the session's deadline passes meanwhile. FailedPreconditionError after
  // CloseSend/Close or once the stream has ended otherwise (Receive or Close then give
  // the stream's final status).
  absl::StatusOr<uint64_t> Send(const TensorView& x, double alpha, double beta);

  // Tells the server no more requests follow; responses still arrive. Idempotent.
  absl::Status CloseSend();

  // Blocks for the next response. A failed request gives a StreamResult whose result is
  // that request's error. When the server has ended the stream: OutOfRangeError if it
  // ended with OK (all responses received), else the stream's final error (e.g.
  // DEADLINE_EXCEEDED, UNAVAILABLE); every later Receive returns the same.
  absl::StatusOr<StreamResult> Receive();

  // CloseSend, then discards responses not yet received, waits for the server to end the
  // stream and returns its final status. Idempotent (later calls return the same status).
  absl::Status Close();

  // Number of responses Close discarded (0 before Close).
  int64_t discarded_responses() const;

  // Cancels the RPC (the server sees it cancelled and stops its work): a Send or Receive
  // blocked meanwhile returns, and Receive and Close then give CancelledError (unless the
  // stream had already ended). Thread-safe; idempotent.
  void Cancel();

 private:
  friend class Client;
  explicit StreamSession(std::unique_ptr<Impl> impl);

  std::unique_ptr<Impl> impl_;
};

// One CallStream RPC: pipelined Calls of any served operators, with StreamSession's
// semantics: the same thread-safety, ownership, flow control and deadline rules (see
// there), and responses matched to requests by the id Send returns.
//
// Tensors of any size (beyond gRPC's 2 GiB message limit too) go both ways: a request
// larger than ClientOptions::max_message_bytes is sent chunked (its header, then every
// tensor's data in chunks of up to 4 MiB, or max_message_bytes when that is smaller;
// the server must accept messages that large, as its default limits do), and results
// too large for one message (the server's or this client's max_message_bytes) come
// chunked and are reassembled, one copy of each byte each way. The server bounds them by
// its memory budget and max elements (RESOURCE_EXHAUSTED / INVALID_ARGUMENT for that
// request; the stream goes on). The protocol: proto/myops/v1/myops.proto, CallStream.
class CallStreamSession {
 public:
  class Impl;

  CallStreamSession(const CallStreamSession&) = delete;
  CallStreamSession& operator=(const CallStreamSession&) = delete;
  ~CallStreamSession();

  // Validates the arguments as Client::Call does, except that tensors may exceed
  // max_message_bytes (InvalidArgumentError; the stream goes on), copies them into a
  // request and writes it, in chunks when it does not fit one message (Send returns once
  // the last one is written; the arguments are not used after); returns the request's id
  // (1, 2, 3, ... in send order). Otherwise as StreamSession::Send.
  absl::StatusOr<uint64_t> Send(absl::string_view op, absl::Span<const Value> args,
                                absl::Span<const NamedArg> kwargs = {});

  // As StreamSession's. Receive reassembles a chunked result before it returns it (an
  // UnavailableError for that request when the stream ends first).
  absl::Status CloseSend();
  absl::StatusOr<CallStreamResult> Receive();
  absl::Status Close();
  int64_t discarded_responses() const;
  void Cancel();

 private:
  friend class Client;
  explicit CallStreamSession(std::unique_ptr<Impl> impl);

  std::unique_ptr<Impl> impl_;
};

}  // namespace myops::client

#endif  // MYOPS_CLIENT_CLIENT_H_
