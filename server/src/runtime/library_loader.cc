// Operator libraries loaded by path (see library_loader.h).
#include "library_loader.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>

#include <regex>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace myops::server {
namespace {

// dlopen's error text, or "" when it succeeded.
std::string Open(const std::string& path) {
  if (dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL) != nullptr) return "";
  const char* error = dlerror();
  return error != nullptr ? error : "unknown dlopen error";
}

bool NeedsPython(const std::string& error) {
  return absl::StrContains(error, "undefined symbol: Py") ||
         absl::StrContains(error, "undefined symbol: _Py");
}

// libpythonX.Y.so.1.0 for the pythonX.Y directory `path` lies under, or "".
std::string LibpythonFor(const std::string& path) {
  char resolved[PATH_MAX];
  const std::string real = realpath(path.c_str(), resolved) != nullptr ? resolved : path;
  std::smatch m;
  static const std::regex kVersion("/python(3\\.[0-9]+)/");
  if (!std::regex_search(real, m, kVersion)) return "";
  return absl::StrCat("libpython", m[1].str(), ".so.1.0");
}

}  // namespace

absl::Status LoadOperatorLibraries(const std::vector<std::string>& paths,
                                   const std::string& libpython) {
  for (const std::string& path : paths) {
    std::string error = Open(path);
    if (error.empty()) continue;
    if (NeedsPython(error)) {
      const std::string python = libpython.empty() ? LibpythonFor(path) : libpython;
      if (python.empty()) {
        return absl::FailedPreconditionError(absl::StrCat(
            "cannot load operator library ", path, ": ", error,
            ". It is a Python extension and needs libpython's symbols, and its Python version "
            "is not in its path: name the libpython to load with --libpython PATH"));
      }
      if (std::string python_error = Open(python); !python_error.empty()) {
        return absl::FailedPreconditionError(absl::StrCat(
            "cannot load operator library ", path, ": it is a Python extension and needs ", python,
            ", which did not load: ", python_error,
            ". Install that Python's shared library (Debian: the libpython3.X package) or "
            "name one with --libpython PATH"));
      }
      error = Open(path);
      if (error.empty()) continue;
    }
    return absl::FailedPreconditionError(
        absl::StrCat("cannot load operator library ", path, ": ", error));
  }
  return absl::OkStatus();
}

}  // namespace myops::server
