// Files that a configuration or a flag names (operator libraries, program packages) are
// checked before dlopen or the package reader opens them: a FIFO would block that open
// forever (start-up or a model load hanging with no message), and a directory or a device
// is a mistake in the configuration. Torch-free; both hosts use it.
#pragma once

#include <string>

#include "absl/status/status.h"

namespace myops::server {

// OK when `path` is a regular file this process may open for reading. Else
// FAILED_PRECONDITION saying why, e.g. "it is a FIFO, not a regular file" or "No such file
// or directory": the caller names the file and what it was for. Opens only a regular file,
// with O_NONBLOCK, and reads nothing: it never blocks, whatever the path is. Thread-safe.
absl::Status CheckRegularFile(const std::string& path);

}  // namespace myops::server
