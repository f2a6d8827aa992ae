// Checking that a named file is a regular file, without blocking (regular_file.h).
#include "runtime/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace myops::server {
namespace {

// errno's text (std::strerror's buffer is shared between threads; this is not).
absl::Status Errno() {
  return absl::FailedPreconditionError(std::error_code(errno, std::generic_category()).message());
}

// What a file that is not a regular file is, for messages.
const char* Kind(mode_t mode) {
  if (S_ISFIFO(mode)) return "it is a FIFO, not a regular file";
  if (S_ISDIR(mode)) return "it is a directory, not a regular file";
  if (S_ISCHR(mode)) return "it is a character device, not a regular file";
  if (S_ISBLK(mode)) return "it is a block device, not a regular file";
  if (S_ISSOCK(mode)) return "it is a socket, not a regular file";
  return "it is not a regular file";
}

}  // namespace

absl::Status CheckRegularFile(const std::string& path) {
  // stat first: a device is refused without being opened (opening one may act on it).
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return Errno();
  if (!S_ISREG(st.st_mode)) return absl::FailedPreconditionError(Kind(st.st_mode));
  const int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return Errno();
  close(fd);
  return absl::OkStatus();
}

}  // namespace myops::server
