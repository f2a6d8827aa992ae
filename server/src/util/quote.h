// EchoValue: how a value a client sent is quoted in an error message. Every status that
// repeats client input goes through it, so that no client value can inflate a message
// (gRPC refuses trailers beyond its metadata limit, and the real error would be lost).
#pragma once

#include <cstddef>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace myops::server {

// At most kMaxEchoBytes of `value`, non-printable bytes escaped, and "...(N bytes)"
// marking a cut.
inline constexpr size_t kMaxEchoBytes = 128;
inline std::string EchoValue(absl::string_view value) {
  if (value.size() <= kMaxEchoBytes) return absl::CHexEscape(value);
  return absl::StrCat(absl::CHexEscape(value.substr(0, kMaxEchoBytes)), "...(", value.size(),
                      " bytes)");
}

}  // namespace myops::server
