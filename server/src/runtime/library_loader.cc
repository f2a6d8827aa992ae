// Operator libraries loaded by path (see library_loader.h).
#include "runtime/library_loader.h"

#include <c10/util/Exception.h>
#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <stdlib.h>
#include <unistd.h>

#include <exception>
#include <regex>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "runtime/regular_file.h"

namespace myops::server {
namespace {

// The library being loaded, for TerminateWhileLoading.
const std::string* g_loading = nullptr;

// A static initializer that throws ends in std::terminate (C++ allows no other way out):
// a library whose TORCH_LIBRARY block fails (a namespace defined twice, a schema that does
// not parse) cannot be caught while dlopen runs it. So while a library loads, the
// terminate handler names the library and what it threw, and the server exits as on any
// other start-up error (status 1) instead of aborting.
[[noreturn]] void TerminateWhileLoading() {
  std::string what = "an exception that is not a std::exception";
  if (std::exception_ptr thrown = std::current_exception()) {
    try {
      std::rethrow_exception(thrown);
    } catch (const c10::Error& e) {
      what = e.what_without_backtrace();
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
  }
  const std::string message = absl::StrCat("myops-server: cannot load operator library ",
                                           *g_loading, ": its initialization threw: ", what, "\n");
  (void)!write(STDERR_FILENO, message.data(), message.size());
  _exit(1);
}

// dlopen's error text, or "" when it succeeded. Exits the process if the library's
// initialization throws (TerminateWhileLoading).
std::string Open(const std::string& path) {
  g_loading = &path;
  const std::terminate_handler previous = std::set_terminate(TerminateWhileLoading);
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  std::set_terminate(previous);
  g_loading = nullptr;
  if (handle != nullptr) return "";
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

// The directory of the loaded libtorch (libc10.so's), or "". Libraries built against
// the torch wheel (e.g. torchvision's) need its other libraries (libtorch_python.so) by
// soname without a path to find them by: a Python process has loaded them already.
std::string TorchLibDir() {
  std::string dir;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        const std::string name = info->dlpi_name != nullptr ? info->dlpi_name : "";
        const size_t slash = name.rfind('/');
        if (slash == std::string::npos || name.substr(slash + 1) != "libc10.so") return 0;
        *static_cast<std::string*>(out) = name.substr(0, slash);
        return 1;
      },
      &dir);
  return dir;
}

// The soname dlopen could not find, from its error text, or "".
std::string MissingLibrary(const std::string& error) {
  static const std::regex kMissing("([^ :]+\\.so[^ :]*): cannot open shared object file");
  std::smatch m;
  return std::regex_search(error, m, kMissing) ? m[1].str() : "";
}

// A path (a name with a '/') must be a regular file (regular_file.h): a FIFO would block
// dlopen forever. A bare soname is dlopen's to find in the system's library paths.
absl::Status CheckPath(const std::string& path) {
  return path.find('/') == std::string::npos ? absl::OkStatus() : CheckRegularFile(path);
}

// Loads `path`, first loading what it needs that can be found: libpython (for Python
// extensions) and libraries of the torch wheel. `depth` bounds the recursion.
absl::Status Load(const std::string& path, const std::string& libpython, int depth) {
  if (absl::Status file = CheckPath(path); !file.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot load operator library ", path, ": ", file.message()));
  }
  std::string error = Open(path);
  for (int attempt = 0; !error.empty() && attempt < 8 && depth < 4; ++attempt) {
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
    } else if (const std::string missing = MissingLibrary(error);
               !missing.empty() && !TorchLibDir().empty() &&
               access((TorchLibDir() + "/" + missing).c_str(), R_OK) == 0) {
      const absl::Status dependency = Load(TorchLibDir() + "/" + missing, libpython, depth + 1);
      if (!dependency.ok()) return dependency;
    } else {
      break;
    }
    error = Open(path);
  }
  if (error.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("cannot load operator library ", path, ": ", error));
}

}  // namespace

absl::Status LoadOperatorLibraries(const std::vector<std::string>& paths,
                                   const std::string& libpython) {
  // Python-extension libraries (see library_loader.h) may also need the torch wheel's
  // libtorch_python.so, which is loaded from the directory libtorch was loaded from.
  // With `libpython` given, it is loaded first.
  if (!libpython.empty()) {
    std::string error(CheckPath(libpython).message());
    if (error.empty()) error = Open(libpython);
    if (!error.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot load --libpython ", libpython, ": ", error));
    }
  }
  for (const std::string& path : paths) {
    if (absl::Status loaded = Load(path, libpython, 0); !loaded.ok()) return loaded;
  }
  return absl::OkStatus();
}

}  // namespace myops::server
