#!/usr/bin/env bash
# The service comparison, in one run: the echo floor (tcmalloc preloaded, its best
# configuration), myops-server and the grpcio+numpy Python peer, each loaded by
# myops-loadtest at payloads 1 KiB..64 MiB and concurrency 1 and 16. Prints a ratio table
# and writes bench/results/compare/{echo,myops,python}.json, compare.json and compare.png.
#
#   bench/compare.sh [--sizes 1KiB,16MiB] [--concurrency 1,16] [--duration 2]  (loadtest flags)
set -euo pipefail
source "$(dirname "$0")/../scripts/env.sh"
myops_build >/dev/null
B="$MYOPS_BUILD_DIR"
OUT="$MYOPS_REPO/bench/results/compare"
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

for name in echo myops python; do
  echo "== $name (${ADDR[$name]})"
  "$B/bench/loadtest/myops-loadtest" --target "${ADDR[$name]}" --sizes 1KiB,64KiB,1MiB,16MiB,64MiB \
    --concurrency 1,16 --duration 2 --warmup 0.5 --max-windows 3 --deadline-ms 120000 \
    --json "$OUT/$name.json" "$@"
done
python "$MYOPS_REPO/bench/compare_report.py" "$OUT"
