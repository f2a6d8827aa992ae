// Parsing of device names and their resolution against a server's device list.
#include "runtime/device.h"

#include <charconv>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "util/quote.h"

namespace myops::server {
namespace {

constexpr char kAccepted[] = "expected \"\", \"cpu\", \"cuda\" or \"cuda:N\" with N >= 0";

// "N" -> N for a non-negative decimal without sign or spaces.
bool ParseOrdinal(absl::string_view s, int* out) {
  if (s.empty() || s.size() > 6) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size() && *out >= 0;
}

}  // namespace

std::string Device::Name() const {
  return kind == DeviceKind::kCpu ? "cpu" : absl::StrCat("cuda:", index);
}

absl::StatusOr<DeviceRequest> ParseDeviceRequest(absl::string_view text) {
  DeviceRequest r;
  if (text.empty()) return r;
  r.any_kind = false;
  if (text == "cpu") return r;
  r.kind = DeviceKind::kCuda;
  if (text == "cuda") return r;
  if (text.substr(0, 5) == "cuda:" && ParseOrdinal(text.substr(5), &r.index)) return r;
  return absl::InvalidArgumentError(
      absl::StrCat("device \"", EchoValue(text), "\" is not a valid device; ", kAccepted));
}

absl::StatusOr<std::vector<Device>> ParseDeviceList(absl::string_view text, int cuda_count) {
  std::vector<Device> out;
  auto add = [&out](Device d) {
    for (const auto& e : out)
      if (e == d) return;
    out.push_back(d);
  };
  for (absl::string_view item : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    auto req = ParseDeviceRequest(item);
    if (!req.ok() || req->any_kind) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--devices: \"", item, "\" is not a device; expected auto, cpu, cuda or cuda:N"));
    }
    if (req->kind == DeviceKind::kCpu) {
      add({DeviceKind::kCpu, 0});
    } else if (req->index < 0) {
      if (cuda_count == 0)
        return absl::FailedPreconditionError("--devices: cuda requested but no GPU is available");
      for (int i = 0; i < cuda_count; ++i) add({DeviceKind::kCuda, i});
    } else {
      if (req->index >= cuda_count) {
        return absl::FailedPreconditionError(absl::StrCat("--devices: cuda:", req->index,
                                                          " requested but ", cuda_count,
                                                          " GPU(s) are available"));
      }
      add({DeviceKind::kCuda, req->index});
    }
  }
  if (out.empty()) return absl::InvalidArgumentError("--devices: no device given");
  return out;
}

absl::StatusOr<int> DeviceSet::Resolve(const DeviceRequest& request, unsigned hint) const {
  if (request.any_kind && !devices_.empty()) return 0;
  std::vector<int> matches;
  for (int i = 0; i < static_cast<int>(devices_.size()); ++i) {
    const Device& d = devices_[i];
    if (d.kind == request.kind && (request.index < 0 || d.index == request.index)) {
      matches.push_back(i);
    }
  }
  if (!matches.empty()) return matches[hint % matches.size()];
  std::string wanted = request.kind == DeviceKind::kCpu ? "cpu"
                       : request.index < 0              ? "cuda"
                                                        : absl::StrCat("cuda:", request.index);
  return absl::FailedPreconditionError(absl::StrCat("device \"", wanted,
                                                    "\" is not available on this server; it "
                                                    "serves: ",
                                                    Names()));
}

std::string DeviceSet::Names() const {
  return absl::StrJoin(devices_, ", ",
                       [](std::string* out, const Device& d) { out->append(d.Name()); });
}

}  // namespace myops::server
