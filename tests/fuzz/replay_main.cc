// Replay driver for the fuzz targets of tests/fuzz in the normal build (no libFuzzer, any
// compiler): linked with one <name>_fuzzer.cc, it runs the target's
// LLVMFuzzerTestOneInput once on every saved input, so that CTest (FuzzReplay.<name>,
// label "fuzz") catches a regression that a corpus or regression input would find:
//   <name>_replay PATH...   each PATH a file, or a folder whose files are all read (its
//                           subfolders too, in name order)
// Calls the target's LLVMFuzzerInitialize first when it defines one. Each input is passed
// as libFuzzer passes it: a heap copy of exactly its size. A broken invariant makes the
// target abort (Fail() in slices.h); the input being run is then named on stderr. Exit
// status: 0 when every input ran, 1 when a PATH is missing or unreadable or no input was
// found, 2 without a PATH.
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
// Optional in a target: weak, so that it is null where the target does not define it.
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int* argc, char*** argv);

namespace {

namespace fs = std::filesystem;

// The input being run, for the crash handler; formatted before the run (no allocation in
// the handler).
char g_current[4096];

void OnCrash(int sig) {
  static const char kPrefix[] = "fuzz replay: crashed on input ";
  ssize_t ignored = write(STDERR_FILENO, kPrefix, sizeof kPrefix - 1);
  ignored = write(STDERR_FILENO, g_current, strlen(g_current));
  ignored = write(STDERR_FILENO, "\n", 1);
  (void)ignored;
  signal(sig, SIG_DFL);
  raise(sig);
}

// Names the input on the signals a broken invariant or a plain crash raises, where nothing
// (e.g. a sanitizer's own handler, which reports better) handles them already.
void InstallCrashHandlers() {
  for (int sig : {SIGILL, SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGTRAP}) {
    struct sigaction old {};
    if (sigaction(sig, nullptr, &old) != 0 || old.sa_handler != SIG_DFL) continue;
    struct sigaction action {};
    action.sa_handler = OnCrash;
    sigemptyset(&action.sa_mask);
    sigaction(sig, &action, nullptr);
  }
}

// Appends the regular files at `path` (itself, or those under it, sorted); false (with a
// message) when it is missing or cannot be listed.
bool CollectInputs(const fs::path& path, std::vector<fs::path>* inputs) {
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) {
    inputs->push_back(path);
    return true;
  }
  if (!fs::is_directory(path, ec)) {
    fprintf(stderr, "fuzz replay: %s: no such file or folder\n", path.c_str());
    return false;
  }
  std::vector<fs::path> found;
  for (fs::recursive_directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_regular_file(ec)) found.push_back(it->path());
  }
  if (ec) {
    fprintf(stderr, "fuzz replay: %s: %s\n", path.c_str(), ec.message().c_str());
    return false;
  }
  std::sort(found.begin(), found.end());
  inputs->insert(inputs->end(), found.begin(), found.end());
  return true;
}

bool ReadFile(const fs::path& path, std::string* contents) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  contents->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return !in.bad();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s FILE_OR_FOLDER...\n", argv[0]);
    return 2;
  }
  std::vector<fs::path> inputs;
  bool ok = true;
  for (int i = 1; i < argc; ++i) ok = CollectInputs(argv[i], &inputs) && ok;
  if (!ok) return 1;
  if (inputs.empty()) {
    fprintf(stderr, "fuzz replay: no input found\n");
    return 1;
  }
  if (LLVMFuzzerInitialize != nullptr) LLVMFuzzerInitialize(&argc, &argv);
  InstallCrashHandlers();
  for (const fs::path& path : inputs) {
    std::string contents;
    if (!ReadFile(path, &contents)) {
      fprintf(stderr, "fuzz replay: cannot read %s\n", path.c_str());
      return 1;
    }
    snprintf(g_current, sizeof g_current, "%s", path.c_str());
    // A copy of exactly the input's size on the heap, as libFuzzer passes it, so that a
    // sanitizer sees a read past its end.
    std::unique_ptr<uint8_t[]> data(new uint8_t[contents.size()]);
    std::copy(contents.begin(), contents.end(), data.get());
    LLVMFuzzerTestOneInput(data.get(), contents.size());
  }
  printf("fuzz replay: %zu inputs ran\n", inputs.size());
  return 0;
}
