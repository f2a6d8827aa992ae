// The command-line syntax of operator arguments, shared by `myops-cli call` and
// `myops-loadtest --op` (kCallArgsHelp documents it): each word is a positional value or
// NAME=VALUE, parsed into client Values (tensors read from .npy files or drawn at random).
#ifndef MYOPS_CLIENT_CLI_CALL_ARGS_H_
#define MYOPS_CLIENT_CLI_CALL_ARGS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "myops/client/value.h"

namespace myops::cli {

// The syntax, for --help texts and the README.
extern const char kCallArgsHelp[];

// Positional values, then keyword values, in command-line order; tensors owned.
struct CallArgs {
  std::vector<client::Value> positional;
  std::vector<client::NamedArg> named;
};

// Parses one VALUE (no NAME=). Random tensors are drawn with `seed`.
// InvalidArgumentError quoting the text and the syntax it failed; file errors as
// ReadNpyFile.
absl::StatusOr<client::Value> ParseValue(absl::string_view text, uint64_t seed);

// Parses the words of a call. The i-th random tensor is drawn with seed + i, so tensors
// differ and the same command line gives the same values. A positional value after a
// keyword one is InvalidArgumentError (as in Python); errors name the word's position.
absl::StatusOr<CallArgs> ParseCallArgs(const std::vector<std::string>& words, uint64_t seed);

// A one-line summary: "float32 [2, 3] (24 bytes): [v0, ...]", "2.5", "[1, 2]", "none",
// "dtype float16", "\"text\"", "2 tensors: float32 [2] ...; float32 [3] ...".
std::string DescribeValue(const client::Value& value, int max_values = 8);

}  // namespace myops::cli

#endif  // MYOPS_CLIENT_CLI_CALL_ARGS_H_
