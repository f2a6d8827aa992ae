#!/usr/bin/env bash
# The Python tests (scripts/test.sh's pytest stage) in two passes: first every test that
# allows it, spread over every core (pytest-xdist, one test file per worker at a time);
# then, one at a time, those that must run alone: marked `serial` (tests/python/conftest.py:
# the hostile and fault suites, which measure a server's memory, descriptors and answer
# times under attack, and tests that time a call). One `large` test (several GiB) may run
# beside another test: the machines have 24 GiB.
#   scripts/pytest.sh [pytest arguments]   e.g. -x, or -k shm
# Needs the environment of scripts/env.sh (MYOPS_BUILD_DIR: the build the tests run).
set -euo pipefail
cd "$(dirname "$0")/.."
# The build makes the Python client: its tests must run, not skip.
export MYOPS_REQUIRE_PYTHON_CLIENT=1
python -m pytest -q -p xdist -n "$(nproc)" --dist loadfile -m "not serial" "$@"
python -m pytest -q -m serial "$@"
