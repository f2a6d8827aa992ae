#!/usr/bin/env bash
# The Python client from its sdist, on a machine prepared by scripts/bootstrap.sh: builds
# dist/myops_client-<version>.tar.gz (scripts/build_wheel.sh), installs it with pip into a
# fresh virtualenv (pip fetches scikit-build-core and compiles the extension against the
# Debian gRPC/protobuf/abseil packages), and runs the client test-suite
# (tests/python/client) with that installed package, against servers from the build tree.
# torch is not installed there: its tests skip. A long run (a few minutes), not part of CI.
#
#   scripts/sdist_test.sh [pytest args]
set -euo pipefail
source "$(dirname "$0")/env.sh"
myops_build >/dev/null  # the servers the tests start
sdist="$("$MYOPS_REPO/scripts/build_wheel.sh" | grep '\.tar\.gz$')"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q "$sdist" pytest ml_dtypes grpcio grpcio-tools
(cd "$work" && "$work/venv/bin/python" -c "import myops_client; print('installed:', myops_client.__file__)
assert myops_client.__file__.startswith('$work/venv/')")
cd "$MYOPS_REPO"
MYOPS_TEST_INSTALLED_CLIENT=1 MYOPS_REQUIRE_PYTHON_CLIENT=1 \
  "$work/venv/bin/python" -m pytest -q -p no:cacheprovider tests/python/client "$@"
