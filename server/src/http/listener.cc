// Shared HTTP listener helpers (see http/listener.h).
#include "http/listener.h"

#include <arpa/inet.h>
#include <civetweb.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace myops::server {
namespace {

// civetweb reports why it cannot start (e.g. "cannot bind to 127.0.0.1:9090: 98 (Address
// already in use)") through log_message on the thread that starts it: CollectStartErrors
// collects those messages here. Runtime messages (other threads) go to civetweb's
// default, which without an error_log_file option is nowhere.
thread_local std::string* start_errors = nullptr;

// Opens and closes one connection to ip:port without ever blocking for long.
void Knock(uint32_t ip, int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = ip;
  if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0 &&
      errno == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    (void)poll(&p, 1, 50);
  }
  close(fd);
}

}  // namespace

absl::StatusOr<ListenAddress> ParseListenAddress(const std::string& address, const char* what) {
  const auto invalid = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(what, " \"", address, "\" ", why));
  };
  const size_t colon = address.rfind(':');
  uint32_t port = 0;
  if (colon == std::string::npos ||
      !std::all_of(address.begin() + colon + 1, address.end(), absl::ascii_isdigit) ||
      !absl::SimpleAtoi(address.substr(colon + 1), &port) || port > 65535) {
    return invalid("is not HOST:PORT (PORT a number, 0 for any free port)");
  }
  std::string host = address.substr(0, colon);
  if (absl::StartsWith(host, "[") && !mg_check_feature(8)) {
    return invalid("is IPv6, which this build's civetweb library does not serve; use IPv4");
  }
  // A comma separates civetweb's listening ports: never let one address become two.
  if (host.find_first_of(", \t") != std::string::npos) return invalid("has an invalid host");
  return ListenAddress{host.empty() ? "0.0.0.0" : host, port};
}

uint32_t LocalAddressOf(const std::string& host) {
  if (host == "0.0.0.0") return htonl(INADDR_LOOPBACK);
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0 || found == nullptr) return 0;
  const uint32_t ip = reinterpret_cast<const sockaddr_in*>(found->ai_addr)->sin_addr.s_addr;
  freeaddrinfo(found);
  return ip;
}

void StopListener(const std::function<void()>& stop, uint32_t ip, int port) {
  std::atomic<bool> stopped{false};
  std::thread knocker([ip, port, &stopped] {
    while (ip != 0 && !stopped.load()) {
      Knock(ip, port);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
  stop();
  stopped = true;
  knocker.join();
}

int LogStartMessage(const mg_connection*, const char* message) {
  if (start_errors == nullptr) return 0;
  absl::StrAppend(start_errors, start_errors->empty() ? "" : "; ", message);
  return 1;
}

void CollectStartErrors(std::string* errors, const std::function<void()>& start) {
  start_errors = errors;
  start();
  start_errors = nullptr;
}

bool ClientHungUp(int fd) {
  pollfd p{fd, POLLRDHUP, 0};
  return poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

}  // namespace myops::server
