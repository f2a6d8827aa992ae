#!/usr/bin/env bash
# Builds myops and runs the kernel benchmark (GB/s vs a*x+b and clone), writing JSON to
# bench/results/ops_bench.json. Extra arguments go to bench/ops_bench.py.
set -euo pipefail
source "$(dirname "$0")/env.sh"
myops_build
PYTHONPATH="$MYOPS_BUILD_DIR/python" python "$MYOPS_REPO/bench/ops_bench.py" "$@"
