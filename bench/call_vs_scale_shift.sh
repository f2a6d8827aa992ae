#!/usr/bin/env bash
# The generic Call's cost over the typed ScaleShift, in one run: myops-loadtest loads one
# myops-server with myops::scale_shift both ways (scale_shift mode, and --op
# myops::scale_shift --arg SHAPE:float32 --arg 2.0 --arg 1.0), closed loop at concurrency
# 1, alternating the two at each payload for --rounds rounds, so that every ratio compares
# measurements seconds apart. Prints, per payload, each round's p50s and the median ratio
# Call/ScaleShift (the target: at most 1.10); writes the loadtest JSONs and a summary to
# bench/results/call_vs_scale_shift/.
#
#   bench/call_vs_scale_shift.sh [--rounds 5] [--sizes 1KiB,16MiB] [loadtest flags]
set -euo pipefail
source "$(dirname "$0")/../scripts/env.sh"
myops_build --target myops-server myops-loadtest >/dev/null
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
myops_start myops "" "$B/server/myops-server" --address 127.0.0.1:0 --devices cpu
common=(--target "$MYOPS_ADDR" --concurrency 1 --duration 2 --warmup 0.5 --min-requests 32
  --quiet "${extra[@]}")

IFS=, read -ra size_list <<<"$sizes"
for round in $(seq "$rounds"); do
  for size in "${size_list[@]}"; do
    "$B/bench/loadtest/myops-loadtest" "${common[@]}" --sizes "$size" \
      --json "$OUT/scale_shift_${size}_$round.json" >/dev/null
    "$B/bench/loadtest/myops-loadtest" "${common[@]}" --op myops::scale_shift \
      --arg "$(($("$MYOPS_VENV/bin/python" -c "
import re, sys
n, unit = re.fullmatch(r'(\d+)(B|KiB|MiB|GiB)?', sys.argv[1]).groups()
print(int(n) * {'B': 1, None: 1, 'KiB': 1 << 10, 'MiB': 1 << 20, 'GiB': 1 << 30}[unit])
" "$size") / 4)):float32" --arg 2.0 --arg 1.0 --json "$OUT/call_${size}_$round.json" >/dev/null
    echo "round $round, $size done" >&2
  done
done

"$MYOPS_VENV/bin/python" - "$OUT" "$sizes" "$rounds" <<'PY'
import json, pathlib, statistics, sys
out, sizes, rounds = pathlib.Path(sys.argv[1]), sys.argv[2].split(","), int(sys.argv[3])
summary = []
print(f"{'payload':>8}  {'ScaleShift p50 us':>30}  {'Call p50 us':>30}  median ratio")
for size in sizes:
    p50 = {kind: [json.loads((out / f"{kind}_{size}_{r}.json").read_text())["points"][0]
                  ["latency_us"]["p50"] for r in range(1, rounds + 1)]
           for kind in ("scale_shift", "call")}
    ratios = [c / s for s, c in zip(p50["scale_shift"], p50["call"])]
    ratio = statistics.median(ratios)
    fmt = lambda xs: " ".join(f"{x:.1f}" for x in xs)
    print(f"{size:>8}  {fmt(p50['scale_shift']):>30}  {fmt(p50['call']):>30}  {ratio:.3f}"
          f" ({min(ratios):.3f}..{max(ratios):.3f})")
    summary.append({"payload": size, "scale_shift_p50_us": p50["scale_shift"],
                    "call_p50_us": p50["call"], "median_ratio": ratio})
(out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
PY
