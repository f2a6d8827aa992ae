// Loading operator libraries (--load-library) into the server process, before the
// operator registry is built: their TORCH_LIBRARY registrations run as they load.
// Libraries stay loaded for the life of the process. Not thread-safe: start-up only.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace myops::server {

// dlopen(RTLD_NOW | RTLD_GLOBAL) of each path in order. A library built as a Python
// extension (torch.utils.cpp_extension, e.g. torchvision's _C.so) needs libpython's
// symbols, which a server has no interpreter for: when loading fails on an undefined
// Python symbol, libpython is loaded first (symbols only, RTLD_GLOBAL; no interpreter is
// started) and the library loaded again. Which libpython: `libpython` when given, else
// libpythonX.Y.so.1.0 for the "pythonX.Y" in the library's path (site-packages). Such
// libraries also need the torch wheel's libtorch_python.so by soname alone: a library
// that cannot be found but lies next to the loaded libtorch is loaded from there. Errors
// are FAILED_PRECONDITION with dlerror()'s text and what to do. A library whose
// initialization throws cannot be returned from (C++ terminates): the process exits
// with status 1 and a message naming the library and what it threw.
absl::Status LoadOperatorLibraries(const std::vector<std::string>& paths,
                                   const std::string& libpython);

}  // namespace myops::server
