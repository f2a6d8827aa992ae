// Comparing secrets (tokens, passwords) without leaking them through timing.
#pragma once

#include "absl/strings/string_view.h"

namespace myops::server {

// Whether a == b, in time that depends only on the sizes (which are not secret: a
// token's length is all an attacker learns).
inline bool ConstantTimeEquals(absl::string_view a, absl::string_view b) {
  if (a.size() != b.size()) return false;
  volatile unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = diff | static_cast<unsigned char>(a[i] ^ b[i]);
  }
  return diff == 0;
}

}  // namespace myops::server
