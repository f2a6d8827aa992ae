// The HTTP/2 receive windows: the fixed window and the read grant (see http2_window.h).
#include "frontends/grpc/http2_window.h"

#include <absl/types/optional.h>
#include <dlfcn.h>
#include <grpc/grpc.h>
#include <grpcpp/server_builder.h>
#include <grpcpp/version_info.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>

// gRPC 1.51's two hooks, declared as in its src/core/ext/transport/chttp2/transport/
// flow_control.h (not installed):
//  - TransportFlowControl::PeriodicUpdate, run at a connection's start and after each BDP
//    probe when probing is on, takes the target window from the mocker when one is set.
//  - StreamFlowControl::DesiredAnnounceSize, which the transport calls (through libgrpc's
//    PLT) for the WINDOW_UPDATE a stream should send; its members, in their order, are
//    the ones it reads.
// Calls to both come from gRPC's threads under the connection's lock; the settings they
// read are set before the server starts and stay.
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

class TransportFlowControl;
class StreamFlowControl final {
 public:
  // Exported for libgrpc's calls to bind to (the executable's definition comes first).
  [[gnu::visibility("default"), gnu::used]] int64_t DesiredAnnounceSize() const;

 private:
  TransportFlowControl* const tfc_;
  int64_t min_progress_size_;  // bytes a pending read needs to complete; 0: no read pending
  int64_t remote_window_delta_;
  int64_t announced_window_delta_;  // the window announced beyond the initial window
  absl::optional<int64_t> pending_size_;
};
}  // namespace grpc_core::chttp2
#endif

namespace myops::server {
namespace {

std::atomic<int64_t> g_window_bytes{0};
std::atomic<int64_t> g_read_grant_bytes{0};

#ifdef MYOPS_HTTP2_WINDOW_HOOK
// The core library's version that the declarations above were checked against.
constexpr const char* kCheckedCoreVersion = "29.0.0";
// gRPC 1.51's read-ahead beyond the window (kMaxWindowDelta) and largest update.
constexpr int64_t kGrpcReadAheadBytes = int64_t{1} << 20;
constexpr int64_t kMaxWindowUpdateBytes = std::numeric_limits<int32_t>::max();

// libgrpc's own DesiredAnnounceSize, and the one its calls bind to (the first definition
// in the process's global scope).
constexpr const char* kDesiredAnnounceSize =
    "_ZNK9grpc_core6chttp217StreamFlowControl19DesiredAnnounceSizeEv";
void* GrpcsDesiredAnnounceSize() {
  static void* const own = dlsym(RTLD_NEXT, kDesiredAnnounceSize);
  return own;
}
bool ReadGrantBound() {
  void* bound = dlsym(RTLD_DEFAULT, kDesiredAnnounceSize);
  return bound != nullptr && bound != GrpcsDesiredAnnounceSize();
}

class FixedWindow final : public grpc_core::chttp2::TestOnlyTransportTargetWindowEstimatesMocker {
 public:
  double ComputeNextTargetInitialWindowSizeFromPeriodicUpdate(double) override {
    return static_cast<double>(g_window_bytes.load(std::memory_order_relaxed));
  }
};
#endif

}  // namespace

bool SetHttp2Windows(int64_t window_bytes, int64_t max_message_bytes,
                     grpc::ServerBuilder* builder) {
#ifdef MYOPS_HTTP2_WINDOW_HOOK
  if (std::strcmp(grpc_version_string(), kCheckedCoreVersion) == 0) {
    const int64_t window = std::clamp(window_bytes, kMinHttp2WindowBytes, kMaxHttp2WindowBytes);
    g_window_bytes.store(window, std::memory_order_relaxed);
    // The rest of one message and its 5-byte prefix, within HTTP/2's largest window; only
    // where libgrpc's calls reach this file's definition (the executable exports it).
    g_read_grant_bytes.store(ReadGrantBound()
                                 ? std::clamp<int64_t>(max_message_bytes + 5, 0,
                                                       std::numeric_limits<int32_t>::max() - window)
                                 : 0,
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
  (void)window_bytes;
  (void)max_message_bytes;
  builder->AddChannelArgument(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  return false;
}

int64_t FixedHttp2WindowBytes() { return g_window_bytes.load(std::memory_order_relaxed); }

int64_t Http2ReadGrantBytes() { return g_read_grant_bytes.load(std::memory_order_relaxed); }

}  // namespace myops::server

#ifdef MYOPS_HTTP2_WINDOW_HOOK
namespace grpc_core::chttp2 {

// gRPC 1.51's own rule, but a pending read whose rest is at most the grant gets that rest
// at once instead of 1 MiB at a time. Before any server set a grant (and with another
// core version, whose layout is unknown), gRPC's own definition answers.
int64_t StreamFlowControl::DesiredAnnounceSize() const {
  using myops::server::g_read_grant_bytes;
  const int64_t grant = g_read_grant_bytes.load(std::memory_order_relaxed);
  if (grant == 0) {
    using Own = int64_t (*)(const StreamFlowControl*);
    if (auto own = reinterpret_cast<Own>(myops::server::GrpcsDesiredAnnounceSize())) {
      return own(this);
    }
  }
  int64_t desired = announced_window_delta_;
  if (min_progress_size_ > 0) {
    desired = min_progress_size_ <= grant
                  ? min_progress_size_
                  : std::min(min_progress_size_, myops::server::kGrpcReadAheadBytes);
  } else if (pending_size_.has_value() && announced_window_delta_ < -*pending_size_) {
    desired = -*pending_size_;
  }
  return std::clamp(desired - announced_window_delta_, int64_t{0},
                    myops::server::kMaxWindowUpdateBytes);
}

}  // namespace grpc_core::chttp2
#endif
