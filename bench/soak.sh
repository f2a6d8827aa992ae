#!/usr/bin/env bash
# Soak test of myops-server: mixed unary and stream traffic (1 KiB..64 MiB, cancellations,
# expired deadlines, malformed requests) from several processes for --duration seconds
# (default 600), the server's RSS, fds and threads sampled from /proc; passes when memory
# plateaus, nothing unexpected failed, and fds and threads return to their baseline.
# Writes soak.json and soak.png to --out (default bench/results/soak-<time>). Not in CI;
# tests/python/faults/test_soak.py runs a 60 s version. See bench/soak/soak.py.
#   bench/soak.sh [--duration SECONDS] [--out DIR] [--server-flag=--max-inflight-bytes=N ...]
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
build="${MYOPS_BUILD_DIR:-$repo/build}"
# The drivers need grpcio: the project's venv (scripts/env.sh sets it up), unless
# MYOPS_PYTHON names another interpreter.
if [[ -z ${MYOPS_PYTHON:-} && -z ${MYOPS_VENV:-} ]]; then source "$repo/scripts/env.sh" >&2; fi
python="${MYOPS_PYTHON:-python3}"
if [[ -n ${MYOPS_VENV:-} ]]; then python="$MYOPS_VENV/bin/python"; fi
args=(--duration 600 --out "$repo/bench/results/soak-$(date +%Y%m%d-%H%M%S)")
exec "$python" "$repo/bench/soak/soak.py" --server "$build/server/myops-server" \
  --loadtest "$build/bench/loadtest/myops-loadtest" "${args[@]}" "$@"
