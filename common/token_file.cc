// Bearer token files (see token_file.h).
#include "myops/common/token_file.h"

#include <fstream>
#include <iterator>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace myops::common {

absl::StatusOr<std::string> ReadTokenFile(const std::string& path, const char* flag) {
  std::ifstream in(path, std::ios::binary);
  std::string token;
  if (in) token.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (!in.is_open() || in.bad()) {
    return absl::NotFoundError(absl::StrCat(flag, ": cannot read \"", path, "\""));
  }
  if (absl::EndsWith(token, "\r\n")) {
    token.resize(token.size() - 2);
  } else if (absl::EndsWith(token, "\n")) {
    token.pop_back();
  }
  if (token.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": \"", path, "\" holds no token; expected one line"));
  }
  return token;
}

}  // namespace myops::common
