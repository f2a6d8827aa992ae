#!/usr/bin/env bash
# Builds the myops_client extension for each CPython version that client/python's
# requires-python claims and runs the Python client tests with it, against the
# myops-server of the main build. Versions whose interpreter (with its headers and venv
# module) is not on this machine are reported as MISSING and make the script fail,
# unless --allow-missing is given, so an untested version cannot pass unnoticed.
#   scripts/test_python_versions.sh [--allow-missing] [3.11 3.12 3.13]
# Needs: a main build (myops_build) for the server binary; per version python3.X,
# python3.X-dev and python3.X-venv (Debian 12 ships only 3.11; Debian 13 ships 3.13).
# Each version gets a venv with numpy, pytest, grpcio and grpcio-tools (call_peer.py) in
# $MYOPS_BUILD_DIR/pyver/3.X.
set -euo pipefail
source "$(dirname "$0")/env.sh"
allow_missing=0
if [[ "${1:-}" == --allow-missing ]]; then allow_missing=1; shift; fi
versions=("$@")
[[ ${#versions[@]} -gt 0 ]] || versions=(3.11 3.12 3.13)
server="$MYOPS_BUILD_DIR/server/myops-server"
[[ -x "$server" ]] || { echo "no $server: run myops_build first" >&2; exit 1; }

declare -A outcome
for version in "${versions[@]}"; do
  python="$(command -v "python$version" || true)"
  if [[ -z "$python" ]] || ! "$python" -c 'import sysconfig, venv, os; 
assert os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h"))' 2>/dev/null
  then
    outcome[$version]=MISSING
    continue
  fi
  dir="$MYOPS_BUILD_DIR/pyver/$version"
  mkdir -p "$dir/server"
  ln -sf "$server" "$dir/server/myops-server"  # myops_testing finds the server here.
  [[ -x "$dir/venv/bin/python" ]] || "$python" -m venv "$dir/venv"
  "$dir/venv/bin/python" -m pip install -q numpy pytest grpcio grpcio-tools >&2
  # The extension alone, as pip's build does (no torch, no tests).
  cmake -S "$MYOPS_REPO" -B "$dir" -G Ninja -Wno-dev -DCMAKE_BUILD_TYPE=Release \
    -DMYOPS_BUILD_OPS=OFF -DMYOPS_BUILD_TESTS=OFF -DMYOPS_BUILD_PYTHON_CLIENT=ON \
    -DMYOPS_MALLOC=system -DPython_EXECUTABLE="$dir/venv/bin/python" >"$dir/configure.log" 2>&1 ||
    { cat "$dir/configure.log" >&2; exit 1; }
  cmake --build "$dir" --target myops_client_python -j 2
  if (cd "$MYOPS_REPO" && MYOPS_BUILD_DIR="$dir" MYOPS_REQUIRE_PYTHON_CLIENT=1 \
      "$dir/venv/bin/python" -m pytest -q -p no:cacheprovider tests/python/client); then
    outcome[$version]=PASSED
  else
    outcome[$version]=FAILED
  fi
done

status=0
for version in "${versions[@]}"; do
  echo "CPython $version: ${outcome[$version]}"
  case "${outcome[$version]}" in
    PASSED) ;;
    MISSING) [[ $allow_missing -eq 1 ]] || status=1 ;;
    *) status=1 ;;
  esac
done
exit $status
