#!/usr/bin/env bash
# myops-server against NVIDIA Triton serving the same operator, with the same client:
# myops-loadtest --protocol kserve (ModelInfer of myops::scale_shift, raw contents, alpha
# and beta as parameters) against myops-server's Open Inference Protocol front end and
# against tritonserver (pytriton's, bench/triton_serve.py through myops_testing.triton)
# serving the hand-written scaleshift backend (bench/peers/triton_scale_shift), or
# another backend and model repository (--triton-backend, --triton-models). Both servers
# run with one CPU worker or instance per core. Per round, fresh servers; per size and
# concurrency, each server gets an unmeasured warm-up run, then a measured run, the order
# alternating by round. Each server's CPU time (utime + stime, /proc/PID/stat) over its
# measured run divided by the requests it answered is its CPU per request, gRPC included
# (10 ms ticks: measure long enough). Prints every round, then per size and concurrency
# the medians over rounds with their ranges: throughput myops/Triton, p50 and p99 of each,
# CPU per request of each. Writes the loadtest JSONs to --out (default
# bench/results/vs_triton/, emptied first; a given folder must be empty).
#
#   bench/vs_triton.sh [--rounds 3] [--sizes 1KiB,64KiB,256KiB,1MiB,16MiB,64MiB]
#                      [--concurrency 1,8] [--duration 3] [--warmup 1] [--requests N]
#                      [--triton-backend DIR] [--triton-models DIR] [--triton-preload LIB]
#                      [--myops-build DIR] [--out DIR] [other myops-loadtest flags]
#
# --myops-build: the build tree with server/myops-server, bench/loadtest/myops-loadtest
# and (the default peer) bench/peers/triton_scale_shift; without it, those targets are
# built into $MYOPS_BUILD_DIR (build/). --triton-backend: a folder holding one
# libtriton_<name>.so; --triton-models: a repository serving myops::scale_shift with it.
# --requests: N requests per measured run instead of --duration seconds.
set -euo pipefail
rounds=3 sizes=1KiB,64KiB,256KiB,1MiB,16MiB,64MiB concurrency=1,8 duration=3 warmup=1
requests="" triton_backend="" triton_models="" triton_preload="" build="" out="" extra=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) rounds="$2"; shift 2 ;;
    --sizes) sizes="$2"; shift 2 ;;
    --concurrency) concurrency="$2"; shift 2 ;;
    --duration) duration="$2"; shift 2 ;;
    --warmup) warmup="$2"; shift 2 ;;
    --requests) requests="$2"; shift 2 ;;
    --triton-backend) triton_backend="$(realpath "$2")"; shift 2 ;;
    --triton-models) triton_models="$(realpath "$2")"; shift 2 ;;
    --triton-preload) triton_preload="$2"; shift 2 ;;
    --myops-build) build="$(realpath "$2")"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    *) extra+=("$1"); shift ;;
  esac
done
source "$(dirname "$0")/../scripts/env.sh"
if [ -z "$build" ]; then
  myops_build --target myops-server myops-loadtest triton_scaleshift >&2
  build="$MYOPS_BUILD_DIR"
fi
triton_backend="${triton_backend:-$build/bench/peers/triton_scale_shift}"
for f in "$build/server/myops-server" "$build/bench/loadtest/myops-loadtest"; do
  [ -x "$f" ] || { echo "$f not found: build it (or pass --myops-build)" >&2; exit 2; }
done
backends=("$triton_backend"/libtriton_*.so)
if [ "${#backends[@]}" != 1 ] || [ ! -f "${backends[0]}" ]; then
  echo "--triton-backend $triton_backend must hold one libtriton_<name>.so" >&2
  exit 2
fi
if [ -z "$out" ]; then
  out="$MYOPS_REPO/bench/results/vs_triton"
  rm -rf "$out"
elif [ -n "$(ls -A "$out" 2>/dev/null)" ]; then
  echo "--out $out is not empty" >&2
  exit 2
fi
mkdir -p "$out"
source "$MYOPS_REPO/scripts/servers.sh"
TICKS="$(getconf CLK_TCK)"
LOADTEST="$build/bench/loadtest/myops-loadtest"

cpu_seconds() {  # utime + stime of process $1, in seconds
  awk -v t="$TICKS" '{ print ($14 + $15) / t }' "/proc/$1/stat"
}

measure=(--duration "$duration")
[ -n "$requests" ] && measure=(--requests "$requests")
echo "myops-server ($build) against tritonserver (backend $triton_backend," \
  "models ${triton_models:-generated, $(nproc) CPU instances}), $(nproc) cores;" \
  "myops-loadtest --protocol kserve, ${measure[*]} per run after ${warmup} s of warm-up" >&2
for round in $(seq "$rounds"); do
  myops_start "myops$round" "" "$build/server/myops-server" --address 127.0.0.1:0 \
    --devices cpu --max-message-bytes $((1 << 30))
  declare -A pid addr
  pid[myops]="$MYOPS_PID" addr[myops]="$MYOPS_ADDR"
  triton_args=(--work "$out/triton$round" --backend "$triton_backend")
  [ -n "$triton_models" ] && triton_args+=(--models "$triton_models")
  [ -n "$triton_preload" ] && triton_args+=(--preload "$triton_preload")
  # triton_serve.py's lines, Triton's own pid among them, go to $MYOPS_SERVERS_DIR/NAME.log.
  myops_start "triton$round" "" "$MYOPS_VENV/bin/python" \
    "$MYOPS_REPO/bench/triton_serve.py" "${triton_args[@]}"
  wrapper="$MYOPS_PID" addr[triton]="$MYOPS_ADDR"
  pid[triton]="$(awk '/^triton pid/ { print $3 }' "$MYOPS_SERVERS_DIR/triton$round.log")"
  order=(myops triton)
  ((round % 2 == 0)) && order=(triton myops)
  for size in ${sizes//,/ }; do
    for conc in ${concurrency//,/ }; do
      for side in "${order[@]}"; do
        run=("$LOADTEST" --protocol kserve --target "${addr[$side]}" --sizes "$size"
             --concurrency "$conc" --quiet "${extra[@]}")
        if [ "$warmup" != 0 ]; then
          "${run[@]}" --warmup 0 --duration "$warmup" >/dev/null
        fi
        before="$(cpu_seconds "${pid[$side]}")"
        "${run[@]}" --warmup 0 "${measure[@]}" --json "$out/$round.$size.$conc.$side.json" >/dev/null
        echo "$before $(cpu_seconds "${pid[$side]}")" >"$out/$round.$size.$conc.$side.cpu"
      done
    done
  done
  kill "${pid[myops]}" "$wrapper"
  wait "${pid[myops]}" "$wrapper" 2>/dev/null || true
done

"$MYOPS_VENV/bin/python" - "$out" "$rounds" "$sizes" "$concurrency" <<'PY'
import json, math, statistics, sys
out, rounds, sizes, concs = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(","), sys.argv[4].split(",")
SIDES = ("myops", "triton")
NAMES = {"myops": "myops", "triton": "Triton"}


def point(r, size, conc, side):
    row = json.load(open(f"{out}/{r}.{size}.{conc}.{side}.json"))["points"][0]
    before, after = map(float, open(f"{out}/{r}.{size}.{conc}.{side}.cpu").read().split())
    answered = row["requests_ok"] + row["errors"]
    return {"rps": row["throughput_rps"], "p50": row["latency_us"]["p50"],
            "p99": row["latency_us"]["p99"],
            "cpu": 1e6 * (after - before) / answered if answered else math.nan}


def cell(values, digits):
    values = [v for v in values if not math.isnan(v)]
    if not values:
        return "nan"
    f = f"{{:.{digits}f}}"
    return f"{f.format(statistics.median(values))} ({f.format(min(values))}..{f.format(max(values))})"


header = ["size", "conc", "req/s myops/Triton"] + [
    f"{q} {NAMES[s]}" for q in ("p50 us", "p99 us", "CPU us/req") for s in SIDES]
rows = []
for size in sizes:
    for conc in concs:
        per = [{s: point(r, size, conc, s) for s in SIDES} for r in range(1, rounds + 1)]
        for r, p in enumerate(per, 1):
            print(f"{size} conc {conc} round {r}: " + "; ".join(
                f"{NAMES[s]} {p[s]['rps']:.1f} req/s, p50 {p[s]['p50']:.1f} us, p99 {p[s]['p99']:.1f} us, "
                f"CPU {p[s]['cpu']:.1f} us/req" for s in SIDES)
                + f"; myops/Triton {p['myops']['rps'] / p['triton']['rps']:.3f}")
        row = [size, conc, cell([p["myops"]["rps"] / p["triton"]["rps"] for p in per], 3)]
        for q in ("p50", "p99", "cpu"):
            row += [cell([p[s][q] for p in per], 1) for s in SIDES]
        rows.append(row)
print(f"\nmedian (min..max) over {rounds} round(s):")
widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
for r in [header] + rows:
    print("  ".join(str(v).rjust(w) if i else str(v).ljust(w) for i, (v, w) in enumerate(zip(r, widths))))
PY
