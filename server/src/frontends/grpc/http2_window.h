// The HTTP/2 receive windows of the gRPC server's connections: one fixed window per stream
// and per connection, and the rest of a message at once for a stream the server is reading.
// Private to the server's assembly (server.cc).
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
// probe; this hook answers the configured size.
//
// Past the window, a stream the server is reading gets gRPC's read-ahead: 1 MiB beyond the
// window (kMaxWindowDelta, a constant), renewed as the bytes arrive. A large request then
// crosses in 1 MiB turns of the client waiting for the server's WINDOW_UPDATE, and with
// several at once the machine idles between turns (bench/README.md, issue 28). Yet gRPC
// holds the whole message before the handler runs, whatever the pace, so granting the rest
// of the message at once holds nothing more: the read grant does that when the rest is at
// most the largest message the server accepts (--max-message-bytes, and gRPC's 5-byte
// prefix). A longer rest, which only a message the server will refuse has, keeps gRPC's
// pace, and a stream with no read pending gets nothing beyond the fixed window. gRPC asks
// StreamFlowControl::DesiredAnnounceSize, an exported function of libgrpc, for the size of
// each stream's WINDOW_UPDATE; the server defines it (http2_window.cc), and the dynamic
// linker binds libgrpc's calls to that definition.
//
// Both use gRPC's internals, so they are used only with the gRPC they were built and checked
// against (core 29.0.0, C++ 1.51): with any other, probing stays off (64 KiB windows) and
// the definition forwards to gRPC's own.
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
// range above), and a stream reading a message to receive its rest at once when that is
// at most `max_message_bytes` (and the prefix). Both are process-wide: the last server configured
// sets them for every gRPC connection in the process, clients' included (a server process has one
// server). Returns false, and leaves gRPC's own windows (probing off), when this gRPC has
// no such hooks.
bool SetHttp2Windows(int64_t window_bytes, int64_t max_message_bytes, grpc::ServerBuilder* builder);

// The window in force for connections made from now on; 0 when none was set.
int64_t FixedHttp2WindowBytes();

// The longest rest of a message a stream is granted at once (the largest message and its
// 5-byte prefix, less any part of HTTP/2's largest window the fixed window takes); 0 when
// none is set, or libgrpc's calls do not reach the server's definition (the executable
// does not export it): gRPC's 1 MiB read-ahead.
int64_t Http2ReadGrantBytes();

}  // namespace myops::server
