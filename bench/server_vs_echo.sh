#!/usr/bin/env bash
# myops-server against the bare echo server (the gRPC floor), side by side in one run:
# p50 latency at concurrency 1 for 1 KiB, 1 MiB, 16 MiB and 64 MiB payloads. myops-server
# runs as built (tcmalloc linked, unless -DMYOPS_SERVER_MALLOC=system); the echo server
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
TMP="$(mktemp -d)"
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$TMP"
}
trap cleanup EXIT

TCMALLOC="$(ls /usr/lib/*/libtcmalloc_minimal.so.4 2>/dev/null | head -n1)"

# start NAME PRELOAD CMD...: runs a server on a free port, prints its address.
start() {
  local name="$1" preload="$2"
  shift 2
  LD_PRELOAD="$preload" "$@" >"$TMP/$name.log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 200); do
    local addr
    addr="$(grep -oE 'listening on [0-9.]+:[0-9]+' "$TMP/$name.log" | head -n1 | awk '{print $3}')"
    if [ -n "$addr" ]; then echo "$addr"; return 0; fi
    sleep 0.1
  done
  echo "$name did not start:" >&2
  cat "$TMP/$name.log" >&2
  return 1
}

SERVER=("$B/server/myops-server" --address 127.0.0.1:0 --devices cpu --max-message-bytes 536870912)
ECHO=("$B/bench/echo_server/echo_server" --address 127.0.0.1:0 --max-message-bytes 536870912)
targets=(--target "myops=$(start myops "" "${SERVER[@]}")"
         --target "echo=$(start echo "" "${ECHO[@]}")")
if [ -n "$TCMALLOC" ]; then
  targets+=(--target "echo+tcmalloc=$(start echo_tc "$TCMALLOC" "${ECHO[@]}")")
fi
"$B/bench/latency/myops-latency" "${targets[@]}" --baseline echo --json "$OUT/server_vs_echo.json" "$@"
