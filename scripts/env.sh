# Sourced by the other scripts: bootstraps (idempotent) and exports the build environment.
#   MYOPS_BUILD_DIR   build tree (default: <repo>/build)
#   MYOPS_BUILD_TYPE  CMake build type (default: Release)
#   MYOPS_CMAKE_ARGS  extra CMake arguments, e.g. "-DMYOPS_WITH_CUDA=OFF"
MYOPS_REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MYOPS_VENV="$("$MYOPS_REPO/scripts/bootstrap.sh" | tail -n 1)"
MYOPS_BUILD_DIR="${MYOPS_BUILD_DIR:-$MYOPS_REPO/build}"
export MYOPS_REPO MYOPS_VENV MYOPS_BUILD_DIR
export PATH="$MYOPS_VENV/bin:$PATH"
# ccache keyed on paths relative to the checkout, so fresh clones hit the warm cache.
export CCACHE_BASEDIR="$MYOPS_REPO" CCACHE_NOHASHDIR=1

# myops_build [cmake --build arguments]: configures and builds (everything by default).
myops_build() {
  local prefix
  mkdir -p "$MYOPS_BUILD_DIR"
  prefix="$(python -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')"
  # shellcheck disable=SC2086
  cmake -S "$MYOPS_REPO" -B "$MYOPS_BUILD_DIR" -G Ninja -Wno-dev \
    -DCMAKE_BUILD_TYPE="${MYOPS_BUILD_TYPE:-Release}" -DCMAKE_PREFIX_PATH="$prefix" \
    ${MYOPS_CMAKE_ARGS:-} >"$MYOPS_BUILD_DIR/configure.log" 2>&1 ||
    { cat "$MYOPS_BUILD_DIR/configure.log" >&2; return 1; }
  cmake --build "$MYOPS_BUILD_DIR" "$@"  # e.g. --target myops-server
}
