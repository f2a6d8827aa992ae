# Sourced by the other scripts: bootstraps (idempotent) and exports the build environment.
#   MYOPS_BUILD_DIR      build tree (default: <repo>/build)
#   MYOPS_BUILD_TYPE     CMake build type (default: Release)
#   MYOPS_CMAKE_ARGS     extra CMake arguments, e.g. "-DMYOPS_WITH_CUDA=OFF"
#   MYOPS_SAN_BUILD_DIR  the sanitized tree (default: <repo>/build-san), myops_san_configure
MYOPS_REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MYOPS_VENV="$("$MYOPS_REPO/scripts/bootstrap.sh" | tail -n 1)"
MYOPS_BUILD_DIR="${MYOPS_BUILD_DIR:-$MYOPS_REPO/build}"
MYOPS_SAN_BUILD_DIR="${MYOPS_SAN_BUILD_DIR:-$MYOPS_REPO/build-san}"
export MYOPS_REPO MYOPS_VENV MYOPS_BUILD_DIR MYOPS_SAN_BUILD_DIR
export PATH="$MYOPS_VENV/bin:$PATH"
# ccache keyed on paths relative to the checkout, so fresh clones hit the warm cache. The
# three build trees' objects (normal, sanitized, CUDA) need more than ccache's default 5 GB.
export CCACHE_BASEDIR="$MYOPS_REPO" CCACHE_NOHASHDIR=1 CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-20G}"

# myops_configure [cmake arguments]: configures MYOPS_BUILD_DIR (quiet unless it fails).
myops_configure() {
  local prefix
  mkdir -p "$MYOPS_BUILD_DIR"
  prefix="$(python -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')"
  # shellcheck disable=SC2086
  cmake -S "$MYOPS_REPO" -B "$MYOPS_BUILD_DIR" -G Ninja -Wno-dev \
    -DCMAKE_BUILD_TYPE="${MYOPS_BUILD_TYPE:-Release}" -DCMAKE_PREFIX_PATH="$prefix" \
    ${MYOPS_CMAKE_ARGS:-} "$@" >"$MYOPS_BUILD_DIR/configure.log" 2>&1 ||
    { cat "$MYOPS_BUILD_DIR/configure.log" >&2; return 1; }
}

# myops_build [cmake --build arguments]: configures and builds (everything by default).
myops_build() {
  myops_configure
  cmake --build "$MYOPS_BUILD_DIR" "$@"  # e.g. --target myops-server
}

# myops_san_configure: configures the sanitized tree, the one build that serves both the
# sanitizer suite (scripts/sanitize.sh address) and the fuzz targets (scripts/fuzz.sh):
# clang-14, ASan + UBSan everywhere, libFuzzer's coverage on what the fuzz targets parse
# with (tests/fuzz/CMakeLists.txt), clang's thread-safety analysis as errors on the
# server's sources (server/CMakeLists.txt), the system allocator, no CUDA, no Python
# client. -O1 with line tables only: reports still name each frame's file and line, and
# the objects of torch-heavy sources shrink to a fraction of -g's.
myops_san_configure() {
  local flags="-O1 -gline-tables-only -DNDEBUG"
  MYOPS_BUILD_DIR="$MYOPS_SAN_BUILD_DIR" MYOPS_BUILD_TYPE=RelWithDebInfo MYOPS_CMAKE_ARGS="" \
    myops_configure -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
    "-DCMAKE_C_FLAGS_RELWITHDEBINFO=$flags" "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=$flags" \
    -DMYOPS_SANITIZE=address -DMYOPS_FUZZ=ON -DMYOPS_MALLOC=system -DMYOPS_WITH_CUDA=OFF \
    -DMYOPS_BUILD_PYTHON_CLIENT=OFF
}
