#!/usr/bin/env bash
# The Python client as users install it: builds the self-contained abi3 wheel
# (scripts/build_wheel.sh), then, in containers from plain Debian base images with only
# python3 (venv, pip) and openssl added - no gRPC, protobuf or abseil packages, no build
# tree - installs the one wheel into a fresh virtualenv, imports it, and runs the client
# test-suite (tests/python/client) against servers that host_launcher.py starts on the
# host. The images: Debian 12 (bookworm, CPython 3.11) and Debian 13 (trixie, CPython
# 3.13); a base image missing from the engine is made here with debootstrap from the
# Debian mirror apt uses (no registry is reachable). The containers share the host's
# network and /tmp, and see the repository (read-only) at its own path;
# MYOPS_TEST_INSTALLED_CLIENT=1 keeps the build tree off sys.path, so the tests import
# the installed wheel. torch is not installed there: its tests skip. A long run (a few
# minutes per release), not part of CI.
#
#   scripts/wheel_container_test.sh [pytest args]
#   MYOPS_WHEEL_RELEASES="trixie" scripts/wheel_container_test.sh   # one release
set -euo pipefail
source "$(dirname "$0")/env.sh"
myops_build >/dev/null  # the servers the tests start (on the host)
wheel="$("$MYOPS_REPO/scripts/build_wheel.sh" | grep "\.whl$")"
"$MYOPS_REPO/../shared/tools/container-engine-setup.sh" >&2

# debian:<release>-slim, made with debootstrap when the engine lacks it.
base_image() {
  local image="docker.io/library/debian:$1-slim" root mirror
  if ! podman image exists "$image"; then
    root="$(mktemp -d)"
    mirror=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
    [ -n "$mirror" ] || mirror=$(awk '$1=="deb"{print $2; exit}' /etc/apt/sources.list)
    debootstrap --variant=minbase "$1" "$root" "$mirror" >/dev/null
    rm -rf "$root"/var/cache/apt/archives/*.deb
    tar -C "$root" -c . | podman import --quiet - "$image" >/dev/null
    rm -rf "$root"
  fi
  echo "$image"
}

work="$(mktemp -d)"
python "$MYOPS_REPO/tests/python/client/host_launcher.py" "$MYOPS_BUILD_DIR" >"$work/launcher" &
launcher_pid=$!
trap 'kill $launcher_pid 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 100); do grep -q "launcher on" "$work/launcher" && break; sleep 0.1; done
launcher="$(sed -n 's/^launcher on //p' "$work/launcher")"
[ -n "$launcher" ] || { echo "host_launcher.py did not start" >&2; exit 1; }

for release in ${MYOPS_WHEEL_RELEASES:-bookworm trixie}; do
  echo "== $(basename "$wheel") on Debian $release" >&2
  podman run --rm --network host \
    -v /etc/ssl/certs/ca-certificates.crt:/host-ca.crt:ro -v /tmp:/tmp \
    -v "$MYOPS_REPO:$MYOPS_REPO:ro" \
    -v "$(dirname "$wheel"):/dist:ro" \
    -e MYOPS_TEST_LAUNCHER="$launcher" -e MYOPS_BUILD_DIR="$MYOPS_BUILD_DIR" \
    -e MYOPS_REQUIRE_PYTHON_CLIENT=1 -e MYOPS_TEST_INSTALLED_CLIENT=1 -e PIP_DISABLE_PIP_VERSION_CHECK=1 -e PIP_CERT=/host-ca.crt \
    -w "$MYOPS_REPO" "$(base_image "$release")" bash -euc '
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 python3-venv openssl >/dev/null
    if dpkg -l | grep -E "libgrpc|libprotobuf|libabsl" >&2; then
      echo "the container has gRPC/protobuf/abseil packages: not a clean test" >&2; exit 1
    fi
    python3 -m venv /opt/venv
    /opt/venv/bin/pip install -q /dist/'"$(basename "$wheel")"' pytest ml_dtypes grpcio grpcio-tools
    cd /tmp  # import from the virtualenv, not from the repository
    /opt/venv/bin/python -c "import myops_client, sys; print(\"installed:\", myops_client.__file__, \"on Python\", sys.version.split()[0]); assert myops_client.__file__.startswith(\"/opt/venv/\")"
    cd '"$MYOPS_REPO"'
    /opt/venv/bin/python -m pytest -q -p no:cacheprovider tests/python/client '"$*"'
    '
done
