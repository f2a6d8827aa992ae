#!/usr/bin/env bash
# The generic Call's cost over the typed ScaleShift, in one run: myops-latency sends
# myops::scale_shift to one myops-server both ways (ScaleShiftInto, and Call with
# [x, 2.0, 1.0]) and the same payload to the bare echo server (the gRPC floor), at
# concurrency 1, interleaving the three request by request so that machine noise hits
# them alike. Repeats that for --rounds runs and prints, per payload, each round's p50s and
# the median ratios Call/ScaleShift (the target: at most 1.10) and ScaleShift/echo; writes
# the rounds' JSONs and a summary to bench/results/call_vs_scale_shift/.
#
#   bench/call_vs_scale_shift.sh [--rounds 5] [--sizes 1KiB,16MiB] [myops-latency flags]
set -euo pipefail
source "$(dirname "$0")/../scripts/env.sh"
myops_build --target myops-server myops-latency myops_echo_server >/dev/null
B="$MYOPS_BUILD_DIR"
OUT="$MYOPS_REPO/bench/results/call_vs_scale_shift"
rounds=5
sizes=1KiB,16MiB
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
myops_start myops "" "$B/server/myops-server" --address 127.0.0.1:0 --devices cpu \
  --max-message-bytes 536870912
myops=$MYOPS_ADDR
myops_start echo "$TCMALLOC" "$B/bench/echo_server/echo_server" --address 127.0.0.1:0 \
  --max-message-bytes 536870912
for round in $(seq "$rounds"); do
  "$B/bench/latency/myops-latency" --target "scale_shift=$myops" --call-target "call=$myops" \
    --target "echo=$MYOPS_ADDR" --baseline scale_shift --sizes "$sizes" --max-requests 2000 \
    --budget-bytes 4294967296 --json "$OUT/round_$round.json" "${extra[@]}" >/dev/null
  echo "round $round done" >&2
done

"$MYOPS_VENV/bin/python" - "$OUT" "$sizes" "$rounds" <<'PY'
import json, pathlib, statistics, sys
out, sizes, rounds = pathlib.Path(sys.argv[1]), sys.argv[2].split(","), int(sys.argv[3])
rows = [json.loads((out / f"round_{r}.json").read_text())["results"] for r in range(1, rounds + 1)]
summary = []
print(f"{'payload':>8}  {'echo p50 us':>26}  {'ScaleShift p50 us':>26}  {'Call p50 us':>26}"
      "  Call/ScaleShift  ScaleShift/echo")
for size in sizes:
    p50 = {t: [next(x["p50_us"] for x in rs if x["size"] == size and x["target"] == t)
               for rs in rows] for t in ("echo", "scale_shift", "call")}
    call = [c / s for s, c in zip(p50["scale_shift"], p50["call"])]
    floor = [s / e for e, s in zip(p50["echo"], p50["scale_shift"])]
    fmt = lambda xs: " ".join(f"{x:.1f}" for x in xs)
    span = lambda xs: f"{statistics.median(xs):.3f} ({min(xs):.2f}..{max(xs):.2f})"
    print(f"{size:>8}  {fmt(p50['echo']):>26}  {fmt(p50['scale_shift']):>26}"
          f"  {fmt(p50['call']):>26}  {span(call)}  {span(floor)}")
    summary.append({"payload": size, **{f"{t}_p50_us": v for t, v in p50.items()},
                    "call_vs_scale_shift": statistics.median(call),
                    "scale_shift_vs_echo": statistics.median(floor)})
(out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
PY
