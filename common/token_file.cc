// Bearer token files (see token_file.h).
#include "myops/common/token_file.h"

#include <algorithm>
#include <fstream>
#include <iterator>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

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

absl::StatusOr<std::vector<std::string>> ReadTokenList(const std::string& path, const char* flag) {
  std::ifstream in(path, std::ios::binary);
  std::string text;
  if (in) text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (!in.is_open() || in.bad()) {
    return absl::NotFoundError(absl::StrCat(flag, ": cannot read \"", path, "\""));
  }
  std::vector<std::string> tokens;
  int line = 0;
  for (absl::string_view l : absl::StrSplit(text, '\n')) {
    ++line;
    if (absl::EndsWith(l, "\r")) l.remove_suffix(1);
    if (l.empty()) continue;
    if (std::find(tokens.begin(), tokens.end(), l) != tokens.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag, ": \"", path, "\" line ", line, " repeats an earlier token"));
    }
    tokens.emplace_back(l);
  }
  if (tokens.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": \"", path, "\" holds no token; expected one per line"));
  }
  return tokens;
}

}  // namespace myops::common
