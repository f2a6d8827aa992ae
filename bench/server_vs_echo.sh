#!/usr/bin/env bash
# myops-server against the bare echo server (the gRPC floor), side by side in one run:
# p50 latency at concurrency 1 for 1 KiB, 1 MiB, 16 MiB and 64 MiB payloads. myops-server
# runs as built (tcmalloc linked, unless -DMYOPS_MALLOC=system); the echo server
# runs with glibc malloc and with tcmalloc preloaded, and the better of the two is the
# floor. Prints p50 ratios against that floor and writes bench/results/server_vs_echo.json.
#
#   bench/server_vs_echo.sh [extra myops-latency flags, e.g. --sizes 1KiB,16MiB]
set -euo pipefail
source "$(dirname "$0")/../scripts/env.sh"
myops_build >/dev/null
B="$MYOPS_BUILD_DIR"
OUT="$MYOPS_REPO/bench/results"
mkdir -p "$OUT"
source "$MYOPS_REPO/scripts/servers.sh"
TCMALLOC="$(ls /usr/lib/*/libtcmalloc_minimal.so.4 2>/dev/null | head -n1)"

SERVER=("$B/server/myops-server" --address 127.0.0.1:0 --devices cpu --max-message-bytes 536870912)
ECHO=("$B/bench/echo_server/echo_server" --address 127.0.0.1:0 --max-message-bytes 536870912)
myops_start myops "" "${SERVER[@]}"
targets=(--target "myops=$MYOPS_ADDR")
myops_start echo "" "${ECHO[@]}"
targets+=(--target "echo=$MYOPS_ADDR")
if [ -n "$TCMALLOC" ]; then
  myops_start echo_tc "$TCMALLOC" "${ECHO[@]}"
  targets+=(--target "echo+tcmalloc=$MYOPS_ADDR")
fi
"$B/bench/latency/myops-latency" "${targets[@]}" --baseline echo --json "$OUT/server_vs_echo.json" "$@"
