// Reads a bearer token file for the command-line tools (myops-cli --token-file,
// myops-loadtest --token-file): the same format myops-server's --auth-token-file reads.
#ifndef MYOPS_CLI_TOKEN_FILE_H_
#define MYOPS_CLI_TOKEN_FILE_H_

#include <string>

#include "absl/status/statusor.h"

namespace myops::cli {

// The token in `path` with one trailing newline ("\n" or "\r\n") stripped. NotFoundError
// when the file cannot be read, InvalidArgumentError when it holds no token; messages
// name `flag` and the path, never the token.
absl::StatusOr<std::string> ReadTokenFile(const std::string& path, const char* flag);

}  // namespace myops::cli

#endif  // MYOPS_CLI_TOKEN_FILE_H_
