#!/usr/bin/env bash
# The test command: the server's layer check (scripts/check_layers.py), bootstrap +
# build, clang's thread-safety analysis of the server (scripts/check_thread_safety.py),
# every test (GoogleTest via CTest, then pytest), then the safety net: the
# GoogleTest suites and end-to-end tests again under ASan+UBSan (scripts/sanitize.sh,
# build-asan/) and a short run of every fuzz target (scripts/fuzz.sh, build-fuzz/;
# MYOPS_FUZZ_SECONDS each, default 12).
# Runs on CPU; CUDA twins skip without a GPU. Exit status is non-zero if anything fails.
set -euo pipefail
source "$(dirname "$0")/env.sh"
python "$MYOPS_REPO/scripts/check_layers.py" "$MYOPS_REPO/server/src"
myops_build
python "$MYOPS_REPO/scripts/check_thread_safety.py" "$MYOPS_BUILD_DIR"
cd "$MYOPS_BUILD_DIR"
ctest --output-on-failure -j "$(nproc)"
cd "$MYOPS_REPO"
# The build above makes the Python client: its tests must run, not skip.
MYOPS_BUILD_DIR="$MYOPS_BUILD_DIR" MYOPS_REQUIRE_PYTHON_CLIENT=1 \
  python -m pytest -q tests/python tests/deploy tests/bench tests/scripts
"$MYOPS_REPO/scripts/sanitize.sh" address
"$MYOPS_REPO/scripts/fuzz.sh" "${MYOPS_FUZZ_SECONDS:-12}"
