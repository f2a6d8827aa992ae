// What the server's HTTP listeners share: parsing HOST:PORT, and telling whether a
// connection's client is still there (both ports); collecting civetweb's start-up errors
// and stopping civetweb promptly (the /metrics endpoint, on prometheus-cpp's civetweb).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"

struct mg_connection;

namespace myops::server {

struct ListenAddress {
  std::string host;  // IPv4 address or host name, never empty
  uint32_t port = 0;
};

// HOST:PORT, checked, with an empty HOST meaning all interfaces; `what` names the flag's
// subject in errors ("metrics address").
absl::StatusOr<ListenAddress> ParseListenAddress(const std::string& address, const char* what);

// The IPv4 address (network order) a local client connects to for a listener on `host`;
// 0 when it does not resolve.
uint32_t LocalAddressOf(const std::string& host);

// Runs `stop` (mg_stop, or what calls it) while knocking at ip:port every 10 ms:
// civetweb's listening thread sees the stop only when its poll returns, which it does
// every 2 s or at a new connection. ip 0: no knocking.
void StopListener(const std::function<void()>& stop, uint32_t ip, int port);

// A civetweb log_message callback: while a thread is inside CollectStartErrors, the
// messages civetweb logs on it are appended to that call's `errors`.
int LogStartMessage(const mg_connection* conn, const char* message);

// Runs `start` with LogStartMessage collecting into `*errors` on this thread.
void CollectStartErrors(std::string* errors, const std::function<void()>& start);

// Whether the client of socket `fd` has hung up (closed or shut down its side; a
// pipelined next request is no hang-up). Never blocks.
bool ClientHungUp(int fd);

}  // namespace myops::server
