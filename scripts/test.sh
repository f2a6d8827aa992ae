#!/usr/bin/env bash
# The test command: bootstrap + build + every test (GoogleTest via CTest, then pytest).
# Runs on CPU; CUDA twins skip without a GPU. Exit status is non-zero if anything fails.
set -euo pipefail
source "$(dirname "$0")/env.sh"
myops_build
cd "$MYOPS_BUILD_DIR"
ctest --output-on-failure -j "$(nproc)"
cd "$MYOPS_REPO"
# The build above makes the Python client: its tests must run, not skip.
MYOPS_BUILD_DIR="$MYOPS_BUILD_DIR" MYOPS_REQUIRE_PYTHON_CLIENT=1 \
  python -m pytest -q tests/python tests/deploy tests/bench
