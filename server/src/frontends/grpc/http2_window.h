// The HTTP/2 receive window of the gRPC server's connections: one fixed size, per stream
// and per connection. Private to the server's assembly (server.cc).
//
// gRPC 1.51 offers two windows, both wrong for an inference server:
//  - BDP probing off: 64 KiB per stream and per connection. A request over 64 KiB waits
//    one round trip for its window (p50 +60 us at 64 KiB on loopback: the "64 KiB step",
//    bench/README.md), and a fast network's throughput is capped at 64 KiB per RTT.
//  - BDP probing on: windows grown to twice the measured bandwidth-delay product, up to
//    32 MiB per stream, for every stream, also the ones the server stopped reading (a
//    stream's read-ahead is full): bytes held outside the memory budget, set by the
//    network rather than the configuration.
// A fixed window takes probing's transport (no round trip under the window) and the
// configuration's bound (a stream the server does not read holds at most the window).
// gRPC has no setting for it: with probing on, it asks a process-wide hook (the one its
// own flow-control tests use) for each connection's window, at the start and after each
// probe; this hook answers the configured size. The hook is part of gRPC's internals,
// so the fixed window is used only with the gRPC it was built and checked against (core
// 29.0.0, C++ 1.51); with any other, probing stays off (64 KiB windows).
#pragma once

#include <cstdint>

namespace grpc {
class ServerBuilder;
}  // namespace grpc

namespace myops::server {

// The smallest and largest windows: HTTP/2's default, and 1 GiB (gRPC's largest).
inline constexpr int64_t kMinHttp2WindowBytes = 65535;
inline constexpr int64_t kMaxHttp2WindowBytes = int64_t{1} << 30;

// Sets `builder`'s connections to receive windows of `window_bytes` (clamped to the
// range above). The window is process-wide: the last server configured sets it for every
// gRPC connection in the process, clients' included (a server process has one server).
// Returns false, and leaves probing off, when this gRPC has no such hook.
bool SetFixedHttp2Window(int64_t window_bytes, grpc::ServerBuilder* builder);

// The window in force for connections made from now on; 0 when none was set.
int64_t FixedHttp2WindowBytes();

}  // namespace myops::server
