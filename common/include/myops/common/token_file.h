// Reads a bearer token file: myops-server's --auth-token-file and the tools'
// --token-file (myops-cli, myops-loadtest) share this one format.
#ifndef MYOPS_COMMON_TOKEN_FILE_H_
#define MYOPS_COMMON_TOKEN_FILE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace myops::common {

// The token in `path` with one trailing newline ("\n" or "\r\n") stripped. NotFoundError
// when the file cannot be read, InvalidArgumentError when it holds no token; messages
// name `flag` and the path, never the token.
absl::StatusOr<std::string> ReadTokenFile(const std::string& path, const char* flag);

// The tokens in `path`, one per line ("\n" or "\r\n" ends a line; empty lines are
// skipped): myops-server's --auth-token-file, where each token is one tenant. A one-line
// file is ReadTokenFile's one token. Errors as ReadTokenFile's, and InvalidArgumentError
// naming the line for a token twice.
absl::StatusOr<std::vector<std::string>> ReadTokenList(const std::string& path, const char* flag);

}  // namespace myops::common

#endif  // MYOPS_COMMON_TOKEN_FILE_H_
