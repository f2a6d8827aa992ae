// The fixed HTTP/2 receive window (see http2_window.h).
#include "frontends/grpc/http2_window.h"

#include <grpc/grpc.h>
#include <grpcpp/server_builder.h>
#include <grpcpp/version_info.h>

#include <algorithm>
#include <atomic>
#include <cstring>

// gRPC 1.51's hook, declared as in its src/core/ext/transport/chttp2/transport/
// flow_control.h (not installed): TransportFlowControl::PeriodicUpdate, run at a
// connection's start and after each BDP probe when probing is on, takes the target
// window from the hook when one is set. Calls come from gRPC's threads, under the
// connection's lock, each reading the pointer; it is set once and never freed.
#if GRPC_CPP_VERSION_MAJOR == 1 && GRPC_CPP_VERSION_MINOR == 51
#define MYOPS_HTTP2_WINDOW_HOOK 1
namespace grpc_core::chttp2 {
class TestOnlyTransportTargetWindowEstimatesMocker {
 public:
  virtual ~TestOnlyTransportTargetWindowEstimatesMocker() {}
  virtual double ComputeNextTargetInitialWindowSizeFromPeriodicUpdate(double current_target) = 0;
};
extern TestOnlyTransportTargetWindowEstimatesMocker*
    g_test_only_transport_target_window_estimates_mocker;
}  // namespace grpc_core::chttp2
#endif

namespace myops::server {
namespace {

std::atomic<int64_t> g_window_bytes{0};

#ifdef MYOPS_HTTP2_WINDOW_HOOK
// The core library's version that the declaration above was checked against.
constexpr const char* kCheckedCoreVersion = "29.0.0";

class FixedWindow final : public grpc_core::chttp2::TestOnlyTransportTargetWindowEstimatesMocker {
 public:
  double ComputeNextTargetInitialWindowSizeFromPeriodicUpdate(double) override {
    return static_cast<double>(g_window_bytes.load(std::memory_order_relaxed));
  }
};
#endif

}  // namespace

bool SetFixedHttp2Window(int64_t window_bytes, grpc::ServerBuilder* builder) {
#ifdef MYOPS_HTTP2_WINDOW_HOOK
  if (std::strcmp(grpc_version_string(), kCheckedCoreVersion) == 0) {
    g_window_bytes.store(std::clamp(window_bytes, kMinHttp2WindowBytes, kMaxHttp2WindowBytes),
                         std::memory_order_relaxed);
    // Set once, before any connection can read it; the hook lives as long as the process.
    static const bool installed = [] {
      grpc_core::chttp2::g_test_only_transport_target_window_estimates_mocker = new FixedWindow();
      return true;
    }();
    (void)installed;
    builder->AddChannelArgument(GRPC_ARG_HTTP2_BDP_PROBE, 1);
    return true;
  }
#endif
  builder->AddChannelArgument(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  return false;
}

int64_t FixedHttp2WindowBytes() { return g_window_bytes.load(std::memory_order_relaxed); }

}  // namespace myops::server
