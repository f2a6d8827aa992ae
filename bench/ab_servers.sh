#!/usr/bin/env bash
# Two builds of myops-server side by side, for a change's before/after: both serve at
# once and myops-latency calls them request by request, interleaved (ScaleShift, or the
# generic Call with --call, KServe ModelInfer with --kserve), so each p50 ratio new/old compares measurements taken
# microseconds apart. Each server's own CPU time (utime + stime, /proc) over a size's run,
# divided by the requests it answered, is its CPU per request, gRPC included (/proc counts
# in 10 ms ticks: hence many requests, --requests or 4 GiB per size and server). Repeats
# --rounds times (fresh servers each round); prints every round and the medians.
#
#   bench/ab_servers.sh OLD_BUILD_DIR NEW_BUILD_DIR [--rounds 5] [--call|--kserve] [--sizes 1KiB,64MiB]
#                       [--requests 20000] [other myops-latency flags]
set -euo pipefail
if [[ $# -lt 2 || ! -x "$1/server/myops-server" || ! -x "$2/server/myops-server" ]]; then
  echo "usage: $0 OLD_BUILD_DIR NEW_BUILD_DIR [flags]: each must hold server/myops-server" >&2
  exit 2
fi
OLD="$1" NEW="$2"
shift 2
rounds=5 call=0 sizes=1KiB,64MiB requests=20000 extra=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) rounds="$2"; shift 2 ;;
    --call) call=1; shift ;;
    --kserve) call=2; shift ;;
    --sizes) sizes="$2"; shift 2 ;;
    --requests) requests="$2"; shift 2 ;;
    *) extra+=("$1"); shift ;;
  esac
done
source "$(dirname "$0")/../scripts/servers.sh"
TICKS="$(getconf CLK_TCK)"
OUT="$(mktemp -d)"
flag=--target
[ "$call" = 1 ] && flag=--call-target
[ "$call" = 2 ] && flag=--kserve-target

cpu_seconds() {  # utime + stime of process $1, in seconds
  awk -v t="$TICKS" '{ print ($14 + $15) / t }' "/proc/$1/stat"
}

for round in $(seq "$rounds"); do
  declare -A pid addr
  for side in old new; do
    dir="$OLD"
    [ "$side" = new ] && dir="$NEW"
    myops_start "$side$round" "" "$dir/server/myops-server" --address 127.0.0.1:0 --devices cpu \
      --max-message-bytes $((1 << 30))
    pid[$side]="$MYOPS_PID" addr[$side]="$MYOPS_ADDR"
  done
  for size in ${sizes//,/ }; do
    before="$(cpu_seconds "${pid[old]}") $(cpu_seconds "${pid[new]}")"
    "$NEW/bench/latency/myops-latency" "$flag" "old=${addr[old]}" "$flag" "new=${addr[new]}" \
      --baseline old --sizes "$size" --max-requests "$requests" --budget-bytes $((4 << 30)) --json "$OUT/$round.$size.json" "${extra[@]}" >/dev/null
    echo "$before $(cpu_seconds "${pid[old]}") $(cpu_seconds "${pid[new]}")" >"$OUT/$round.$size.cpu"
  done
  kill "${pid[old]}" "${pid[new]}"
  wait 2>/dev/null || true
done

python3 - "$OUT" "$rounds" "$sizes" <<'PY'
import json, statistics, sys
out, rounds, sizes = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(",")
warmup = 3  # myops-latency's default untimed requests per target and size
for size in sizes:
    p50, cpu = [], []
    for r in range(1, rounds + 1):
        rows = {x["target"]: x for x in json.load(open(f"{out}/{r}.{size}.json"))["results"]}
        old0, new0, old1, new1 = map(float, open(f"{out}/{r}.{size}.cpu").read().split())
        n = {side: rows[side]["requests"] + warmup for side in ("old", "new")}
        per = {"old": (old1 - old0) / n["old"], "new": (new1 - new0) / n["new"]}
        p50.append(rows["new"]["p50_us"] / rows["old"]["p50_us"])
        cpu.append(per["new"] / per["old"] if per["old"] > 0 else float("nan"))
        print(f"{size} round {r}: p50 old {rows['old']['p50_us']:.1f} us, new "
              f"{rows['new']['p50_us']:.1f} us ({p50[-1]:.3f}); server CPU per request old "
              f"{1e6 * per['old']:.1f} us, new {1e6 * per['new']:.1f} us ({cpu[-1]:.3f})")
    print(f"{size} median new/old: p50 {statistics.median(p50):.3f} "
          f"({min(p50):.3f}..{max(p50):.3f}), server CPU per request "
          f"{statistics.median(cpu):.3f} ({min(cpu):.3f}..{max(cpu):.3f})")
PY
rm -rf "$OUT"
