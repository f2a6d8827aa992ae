#!/usr/bin/env bash
# The Python client as users install it: builds the self-contained wheel
# (scripts/build_wheel.sh), then, in a container from the plain Debian base image with
# only python3 (venv, pip) and openssl added - no gRPC, protobuf or abseil packages, no
# build tree - installs the wheel into a fresh virtualenv, imports it, and runs the
# client test-suite (tests/python/client) against servers that host_launcher.py starts
# on the host. The container shares the host's network and /tmp, and sees the
# repository (read-only) at its own path; MYOPS_TEST_INSTALLED_CLIENT=1 keeps the build
# tree off sys.path, so the tests import the installed wheel. torch is not installed there: its
# tests skip. A long run (a few minutes), not part of CI.
#
#   scripts/wheel_container_test.sh [pytest args]
set -euo pipefail
source "$(dirname "$0")/env.sh"
myops_build >/dev/null  # the servers the tests start (on the host)
wheel="$("$MYOPS_REPO/scripts/build_wheel.sh" | grep "\.whl$")"
"$MYOPS_REPO/../shared/tools/container-engine-setup.sh" >&2

work="$(mktemp -d)"
python "$MYOPS_REPO/tests/python/client/host_launcher.py" "$MYOPS_BUILD_DIR" >"$work/launcher" &
launcher_pid=$!
trap 'kill $launcher_pid 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 100); do grep -q "launcher on" "$work/launcher" && break; sleep 0.1; done
launcher="$(sed -n 's/^launcher on //p' "$work/launcher")"
[ -n "$launcher" ] || { echo "host_launcher.py did not start" >&2; exit 1; }

podman run --rm --network host \
  -v /etc/ssl/certs/ca-certificates.crt:/host-ca.crt:ro -v /tmp:/tmp \
  -v "$MYOPS_REPO:$MYOPS_REPO:ro" \
  -v "$(dirname "$wheel"):/dist:ro" \
  -e MYOPS_TEST_LAUNCHER="$launcher" -e MYOPS_BUILD_DIR="$MYOPS_BUILD_DIR" \
  -e MYOPS_REQUIRE_PYTHON_CLIENT=1 -e MYOPS_TEST_INSTALLED_CLIENT=1 -e PIP_DISABLE_PIP_VERSION_CHECK=1 -e PIP_CERT=/host-ca.crt \
  -w "$MYOPS_REPO" docker.io/library/debian:bookworm-slim bash -euc '
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 python3-venv openssl >/dev/null
    if dpkg -l | grep -E "libgrpc|libprotobuf|libabsl" >&2; then
      echo "the container has gRPC/protobuf/abseil packages: not a clean test" >&2; exit 1
    fi
    python3 -m venv /opt/venv
    /opt/venv/bin/pip install -q /dist/'"$(basename "$wheel")"' pytest ml_dtypes grpcio grpcio-tools
    cd /tmp  # import from the virtualenv, not from the repository
    /opt/venv/bin/python -c "import myops_client, sys; print(\"installed:\", myops_client.__file__); assert myops_client.__file__.startswith(\"/opt/venv/\")"
    cd '"$MYOPS_REPO"'
    /opt/venv/bin/python -m pytest -q -p no:cacheprovider tests/python/client '"$*"'
  '
