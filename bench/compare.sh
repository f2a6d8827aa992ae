#!/usr/bin/env bash
# The service comparison, in one run: the echo floor (tcmalloc preloaded, its best
# configuration), myops-server and the grpcio+numpy Python peer, each loaded by
# myops-loadtest at payloads 1 KiB..64 MiB and concurrency 1 and 16. The three servers
# run side by side at each payload in turn, and the whole sweep repeats --rounds times,
# so every ratio comes from measurements seconds apart; the report gives the median
# ratio over the rounds and its range. Each window waits for at least 32 completions (up
# to 30 s), so the slow points (the peer at 64 MiB) are not rates of a handful of requests. Writes bench/results/compare/round*/ (one loadtest
# JSON per server and payload), compare.json and compare.png.
#
#   bench/compare.sh [--rounds 3] [--sizes 1KiB,16MiB] [loadtest flags, e.g. --duration 2]
set -euo pipefail
source "$(dirname "$0")/../scripts/env.sh"
myops_build >/dev/null
B="$MYOPS_BUILD_DIR"
OUT="$MYOPS_REPO/bench/results/compare"
rounds=3
sizes=1KiB,64KiB,1MiB,16MiB,64MiB
extra=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) rounds="$2"; shift 2 ;;
    --sizes) sizes="$2"; shift 2 ;;
    *) extra+=("$1"); shift ;;
  esac
done
rm -rf "$OUT"
mkdir -p "$OUT"
source "$MYOPS_REPO/scripts/servers.sh"

TCMALLOC="$(ls /usr/lib/*/libtcmalloc_minimal.so.4 2>/dev/null | head -n1)"
MAX=$((1 << 30))
declare -A ADDR
myops_start echo "$TCMALLOC" "$B/bench/echo_server/echo_server" --address 127.0.0.1:0 --max-message-bytes $MAX
ADDR[echo]="$MYOPS_ADDR"
myops_start myops "" "$B/server/myops-server" --address 127.0.0.1:0 --devices cpu --max-message-bytes $MAX --max-inflight 256
ADDR[myops]="$MYOPS_ADDR"
myops_start python "" python "$MYOPS_REPO/bench/peers/python_server.py" --address 127.0.0.1:0 --max-message-bytes $MAX
ADDR[python]="$MYOPS_ADDR"

for round in $(seq 1 "$rounds"); do
  mkdir -p "$OUT/round$round"
  for size in ${sizes//,/ }; do
    for name in echo myops python; do
      echo "== round $round/$rounds, $size, $name (${ADDR[$name]})"
      "$B/bench/loadtest/myops-loadtest" --target "${ADDR[$name]}" --sizes "$size" \
        --concurrency 1,16 --duration 1.5 --min-requests 32 --warmup 0.5 --max-windows 2 \
        --deadline-ms 120000 --quiet --json "$OUT/round$round/$name-$size.json" "${extra[@]}" \
        >"$OUT/last.log"
      grep '^conc' "$OUT/last.log" | head -n2
    done
  done
done
python "$MYOPS_REPO/bench/compare_report.py" "$OUT"
