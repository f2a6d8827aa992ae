#!/usr/bin/env bash
# Two servers of the same operator called by the same client, side by side: by default
# myops-server against NVIDIA Triton (pytriton's, bench/triton_serve.py through
# myops_testing.triton) serving the hand-written scaleshift backend
# (bench/peers/triton_scale_shift); with --triton-backend myops, Triton serving it with the
# myops backend (backends/triton); with --sides, any two of those, such as two Tritons
# with two backends (bench/triton_backends.sh). The client is myops-loadtest --protocol
# kserve (ModelInfer of myops::scale_shift, raw contents, alpha and beta as parameters),
# so both servers get byte-identical requests; its closed loop runs on callbacks
# (--driver callbacks, unless the flags given choose --driver threads), which leaves the
# servers, on a machine whose cores the client shares, the most CPU. With --client
# tritonclient it is Triton's own Python client, tritonclient.grpc, one thread and channel
# per concurrent request (bench/tritonclient_load.py, the same requests; its GIL, not the
# servers, sets the pace from a few threads on); with --client perf_analyzer, Triton's
# own load generator, perf_analyzer 2.51.0 in its default mode, one thread per concurrent
# request (bench/perf_analyzer_load.py; the same requests, the data random, installed by
# bench/peers/perf_analyzer.sh; --duration only; the requests answered are the servers'
# own count, from ModelStatistics). Servers run with one CPU worker or
# instance per core. Per round, fresh servers, both up at once; per size and
# concurrency, each server gets an unmeasured warm-up run, then a measured run, the order
# alternating by round. Each server's CPU time (utime + stime, /proc/PID/stat) over its
# measured run divided by the requests it answered is its CPU per request, gRPC included
# (10 ms ticks: measure long enough). Prints every round, then per size and concurrency
# the medians over rounds with their ranges: throughput and CPU per request of the first
# side over the second's (per-round ratios), p50 and p99 of each, CPU per request of
# each; with --cpu-gate SIZE:MAX, whether the median CPU ratio at SIZE is at most MAX.
# With --slices N, each measured run is N slices of --duration/N seconds (or --requests/N
# requests), the two servers taking turns slice by slice (A B B A A B ...), so that the
# machine's drift over a run (other tenants, clock) falls on both alike: a side's CPU per
# request is then its CPU over all its slices divided by all the requests they answered,
# its p50 and p99 the medians of its slices'. Writes the loadtest JSONs to --out (default
# bench/results/vs_triton/, emptied first; a given folder must be empty).
#
#   bench/vs_triton.sh [--rounds 3] [--sizes 1KiB,64KiB,256KiB,1MiB,16MiB,64MiB]
#                      [--concurrency 1,8] [--duration 3] [--slices 1] [--warmup 1]
#                      [--requests N]
#                      [--triton-backend scaleshift|myops|DIR] [--triton-models DIR]
#                      [--triton-preload LIB] [--sides LABEL=SERVER,LABEL=SERVER]
#                      [--cpu-gate SIZE:MAX] [--myops-build DIR] [--out DIR]
#                      [--client myops-loadtest|tritonclient|perf_analyzer]
#                      [other myops-loadtest flags]
#
# --myops-build: the build tree with server/myops-server, bench/loadtest/myops-loadtest
# and the backends (bench/peers/triton_scale_shift, backends/triton/myops); without it,
# the targets the sides need are built into $MYOPS_BUILD_DIR (build/).
# --triton-backend: scaleshift (the hand-written peer, the default), myops (the myops
# backend, its model configured by two lines: the backend and the op), or a folder holding
# one libtriton_<name>.so; --triton-models: a repository serving myops::scale_shift with
# it instead of the generated one. --requests: N requests per measured run instead of
# --duration seconds. --sides (default myops=server,Triton=triton): the two servers and
# their labels; SERVER is `server` (myops-server), `server:DIR` (the myops-server of the
# build tree DIR, for a change's before/after under load), `triton` (Triton with
# --triton-backend and --triton-models) or `triton:BACKEND` (Triton with BACKEND, as
# --triton-backend takes it, and a generated repository); the ratios are the first side
# over the second.
set -euo pipefail
rounds=3 sizes=1KiB,64KiB,256KiB,1MiB,16MiB,64MiB concurrency=1,8 duration=3 warmup=1 slices=1
requests="" triton_backend=scaleshift triton_models="" triton_preload="" build="" out=""
sides=myops=server,Triton=triton cpu_gate="" extra=() client=myops-loadtest
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) rounds="$2"; shift 2 ;;
    --sizes) sizes="$2"; shift 2 ;;
    --concurrency) concurrency="$2"; shift 2 ;;
    --duration) duration="$2"; shift 2 ;;
    --slices) slices="$2"; shift 2 ;;
    --warmup) warmup="$2"; shift 2 ;;
    --requests) requests="$2"; shift 2 ;;
    --triton-backend) triton_backend="$2"; shift 2 ;;
    --triton-models) triton_models="$(realpath "$2")"; shift 2 ;;
    --triton-preload) triton_preload="$2"; shift 2 ;;
    --sides) sides="$2"; shift 2 ;;
    --cpu-gate) cpu_gate="$2"; shift 2 ;;
    --myops-build) build="$(realpath "$2")"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --client) client="$2"; shift 2 ;;
    *) extra+=("$1"); shift ;;
  esac
done

# The two sides: label[i] and what serves it, server[i]: myops-server, or Triton with a
# backend (myops, scaleshift or a folder) and, for `triton`, --triton-models.
IFS=, read -r -a specs <<<"$sides"
label=() server=() backend=() models=() binary=()
for spec in "${specs[@]}"; do
  name="${spec%%=*}" what="${spec#*=}"
  if [[ "$spec" != *=* || ! "$name" =~ ^[A-Za-z0-9+._-]+$ ]]; then
    echo "--sides $sides: expected LABEL=SERVER,LABEL=SERVER (LABEL: letters, digits, +._-)" >&2
    exit 2
  fi
  case "$what" in
    server) backend+=("") models+=("") binary+=("") ;;
    server:?*)
      [ -x "${what#server:}/server/myops-server" ] || {
        echo "--sides $sides: ${what#server:}/server/myops-server not found" >&2; exit 2; }
      backend+=("") models+=("") binary+=("$(realpath "${what#server:}")/server/myops-server") ;;
    triton) backend+=("$triton_backend") models+=("$triton_models") binary+=("") ;;
    triton:?*) backend+=("${what#triton:}") models+=("") binary+=("") ;;
    *) echo "--sides $sides: a server is server, triton or triton:BACKEND, not '$what'" >&2
       exit 2 ;;
  esac
  label+=("$name") server+=("${what%%:*}")
done
if [ "${#label[@]}" != 2 ] || [ "${label[0]}" = "${label[1]}" ]; then
  echo "--sides $sides: expected two sides with different labels" >&2
  exit 2
fi
case "$client" in
  myops-loadtest) [[ " ${extra[*]} " == *" --driver"* ]] || extra+=(--driver callbacks) ;;
  tritonclient | perf_analyzer)
    if [ "${#extra[@]}" != 0 ]; then
      echo "--client $client takes no myops-loadtest flags: ${extra[*]}" >&2
      exit 2
    fi
    if [ "$client" = perf_analyzer ] && [ -n "$requests" ]; then
      echo "--client perf_analyzer measures time windows: give --duration, not --requests" >&2
      exit 2
    fi ;;
  *) echo "--client $client: expected myops-loadtest, tritonclient or perf_analyzer" >&2
     exit 2 ;;
esac
if [[ ! "$slices" =~ ^[1-9][0-9]*$ ]]; then
  echo "--slices $slices: expected a whole number of slices, at least 1" >&2
  exit 2
fi
if [ -n "$cpu_gate" ] && [[ ! "$cpu_gate" =~ ^[^:,]+:[0-9]+(\.[0-9]+)?$ ]]; then
  echo "--cpu-gate $cpu_gate: expected SIZE:MAX, such as 1KiB:1.10" >&2
  exit 2
fi

source "$(dirname "$0")/../scripts/env.sh"
if [ -z "$build" ]; then
  targets=(myops-loadtest)
  for i in 0 1; do
    case "${server[i]}:${backend[i]}" in
      server:) targets+=(myops-server) ;;
      triton:scaleshift) targets+=(triton_scaleshift) ;;
      triton:myops) targets+=(triton_myops) ;;
    esac
  done
  mapfile -t targets < <(printf '%s\n' "${targets[@]}" | sort -u)
  myops_build --target "${targets[@]}" >&2
  build="$MYOPS_BUILD_DIR"
fi
# A backend as --triton-backend takes it -> the folder holding its libtriton_<name>.so.
for i in 0 1; do
  case "${backend[i]}" in
    "") ;;
    scaleshift) backend[i]="$build/bench/peers/triton_scale_shift" ;;
    myops) backend[i]="$build/backends/triton/myops" ;;
    *) backend[i]="$(realpath "${backend[i]}")" ;;
  esac
done
needed=("$build/bench/loadtest/myops-loadtest")
[[ " ${server[*]} " == *" server "* ]] && needed+=("$build/server/myops-server")
for i in 0 1; do
  [ "${server[i]}" = server ] && [ -z "${binary[i]}" ] && binary[i]="$build/server/myops-server"
done
for f in "${needed[@]}"; do
  [ -x "$f" ] || { echo "$f not found: build it (or pass --myops-build)" >&2; exit 2; }
done
for i in 0 1; do
  [ "${server[i]}" = triton ] || continue
  libraries=("${backend[i]}"/libtriton_*.so)
  if [ "${#libraries[@]}" != 1 ] || [ ! -f "${libraries[0]}" ]; then
    echo "--triton-backend ${backend[i]} must hold one libtriton_<name>.so" >&2
    exit 2
  fi
done
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
LOADTEST=("$build/bench/loadtest/myops-loadtest")
[ "$client" = tritonclient ] && LOADTEST=("$MYOPS_VENV/bin/python" "$MYOPS_REPO/bench/tritonclient_load.py")
if [ "$client" = perf_analyzer ]; then
  MYOPS_PERF_ANALYZER="$("$MYOPS_REPO/bench/peers/perf_analyzer.sh")"
  export MYOPS_PERF_ANALYZER
  LOADTEST=("$MYOPS_VENV/bin/python" "$MYOPS_REPO/bench/perf_analyzer_load.py")
fi

cpu_seconds() {  # utime + stime of process $1, in seconds
  awk -v t="$TICKS" '{ print ($14 + $15) / t }' "/proc/$1/stat"
}

# start_side I ROUND: starts side I's server; sets pid[I] (the process whose CPU counts),
# addr[I], and stop[I] (the process to signal: for Triton, triton_serve.py).
declare -a pid addr stop
start_side() {
  local i="$1" round="$2" args
  if [ "${server[i]}" = server ]; then
    myops_start "${label[i]}$round" "" "${binary[i]}" --address 127.0.0.1:0 \
      --devices cpu --max-message-bytes $((1 << 30))
    pid[i]="$MYOPS_PID" stop[i]="$MYOPS_PID" addr[i]="$MYOPS_ADDR"
    return
  fi
  args=(--work "$out/${label[i]}$round" --backend "${backend[i]}")
  [ -n "${models[i]}" ] && args+=(--models "${models[i]}")
  [ -n "$triton_preload" ] && args+=(--preload "$triton_preload")
  # triton_serve.py's lines, Triton's own pid among them, go to $MYOPS_SERVERS_DIR/NAME.log.
  myops_start "${label[i]}$round" "" "$MYOPS_VENV/bin/python" \
    "$MYOPS_REPO/bench/triton_serve.py" "${args[@]}"
  stop[i]="$MYOPS_PID" addr[i]="$MYOPS_ADDR"
  pid[i]="$(awk '/^triton pid/ { print $3 }' "$MYOPS_SERVERS_DIR/${label[i]}$round.log")"
}

describe() {  # describe I: side I in words
  if [ "${server[$1]}" = server ]; then
    echo "${label[$1]}: myops-server (${binary[$1]}, $(nproc) CPU workers)"
  else
    echo "${label[$1]}: tritonserver (backend ${backend[$1]}," \
      "models ${models[$1]:-generated, $(nproc) CPU instances})"
  fi
}

# One slice of a measured run: --duration/--slices seconds, or --requests/--slices requests.
measure=(--duration "$(awk -v d="$duration" -v n="$slices" 'BEGIN { print d / n }')")
[ -n "$requests" ] && measure=(--requests "$(((requests + slices - 1) / slices))")
echo "$(describe 0); $(describe 1); $(nproc) cores; $client --protocol kserve ${extra[*]}," \
  "${measure[*]} per slice, $slices slice(s) per run, after ${warmup} s of warm-up" >&2
for round in $(seq "$rounds"); do
  start_side 0 "$round"
  start_side 1 "$round"
  order=(0 1)
  ((round % 2 == 0)) && order=(1 0)
  for size in ${sizes//,/ }; do
    for conc in ${concurrency//,/ }; do
      run=(--protocol kserve --sizes "$size" --concurrency "$conc" --quiet "${extra[@]}")
      if [ "$warmup" != 0 ]; then
        for i in "${order[@]}"; do
          "${LOADTEST[@]}" --target "${addr[i]}" "${run[@]}" --warmup 0 --duration "$warmup" >/dev/null
        done
      fi
      for slice in $(seq "$slices"); do
        turn=("${order[@]}")
        ((slice % 2 == 0)) && turn=("${order[1]}" "${order[0]}")
        for i in "${turn[@]}"; do
          name="$out/$round.$size.$conc.${label[i]}.$slice"
          before="$(cpu_seconds "${pid[i]}")"
          "${LOADTEST[@]}" --target "${addr[i]}" "${run[@]}" --warmup 0 "${measure[@]}" \
            --json "$name.json" >/dev/null
          echo "$before $(cpu_seconds "${pid[i]}")" >"$name.cpu"
        done
      done
    done
  done
  kill "${stop[0]}" "${stop[1]}"
  wait "${stop[0]}" "${stop[1]}" 2>/dev/null || true
done

"$MYOPS_VENV/bin/python" - "$out" "$rounds" "$sizes" "$concurrency" "${label[0]}" "${label[1]}" \
  "$cpu_gate" "$slices" <<'PY'
import json, math, statistics, sys
out, rounds, sizes, concs = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(","), sys.argv[4].split(",")
A, B = SIDES = sys.argv[5], sys.argv[6]
gate = sys.argv[7]
slices = int(sys.argv[8])
RATIO = f"{A}/{B}"


def point(r, size, conc, side):
    """A side's figures in round r over its slices: requests/s over the time they took,
    CPU over all the requests answered, the median slice's p50 and p99."""
    answered = cpu = seconds = 0.0
    p50s, p99s = [], []
    for k in range(1, slices + 1):
        name = f"{out}/{r}.{size}.{conc}.{side}.{k}"
        row = json.load(open(f"{name}.json"))["points"][0]
        before, after = map(float, open(f"{name}.cpu").read().split())
        n = row["requests_ok"] + row["errors"]
        answered += n
        cpu += after - before
        seconds += n / row["throughput_rps"] if row["throughput_rps"] else 0.0
        p50s.append(row["latency_us"]["p50"])
        p99s.append(row["latency_us"]["p99"])
    return {"rps": answered / seconds if seconds else math.nan,
            "p50": statistics.median(p50s), "p99": statistics.median(p99s),
            "cpu": 1e6 * cpu / answered if answered else math.nan}


def ratio(a, b):
    return a / b if b and not math.isnan(a) and not math.isnan(b) else math.nan


def cell(values, digits):
    values = [v for v in values if not math.isnan(v)]
    if not values:
        return "nan"
    f = f"{{:.{digits}f}}"
    return f"{f.format(statistics.median(values))} ({f.format(min(values))}..{f.format(max(values))})"


header = ["size", "conc", f"req/s {RATIO}", f"CPU/req {RATIO}"] + [
    f"{q} {s}" for q in ("p50 us", "p99 us", "CPU us/req") for s in SIDES]
rows, cpu_ratios = [], {}
for size in sizes:
    for conc in concs:
        per = [{s: point(r, size, conc, s) for s in SIDES} for r in range(1, rounds + 1)]
        rps = [ratio(p[A]["rps"], p[B]["rps"]) for p in per]
        cpu = [ratio(p[A]["cpu"], p[B]["cpu"]) for p in per]
        for r, p in enumerate(per, 1):
            print(f"{size} conc {conc} round {r}: " + "; ".join(
                f"{s} {p[s]['rps']:.1f} req/s, p50 {p[s]['p50']:.1f} us, p99 {p[s]['p99']:.1f} us, "
                f"CPU {p[s]['cpu']:.1f} us/req" for s in SIDES)
                + f"; {RATIO} req/s {rps[r - 1]:.3f}, CPU/req {cpu[r - 1]:.3f}")
        row = [size, conc, cell(rps, 3), cell(cpu, 3)]
        for q in ("p50", "p99", "cpu"):
            row += [cell([p[s][q] for p in per], 1) for s in SIDES]
        rows.append(row)
        cpu_ratios[size, conc] = [v for v in cpu if not math.isnan(v)]
print(f"\nmedian (min..max) over {rounds} round(s):")
widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
for r in [header] + rows:
    print("  ".join(str(v).rjust(w) if i else str(v).ljust(w) for i, (v, w) in enumerate(zip(r, widths))))
if gate:
    size, limit = gate.split(":")
    for conc in concs:
        values = cpu_ratios.get((size, conc))
        if values is None:
            print(f"gate: {size} was not measured")
            break
        median = statistics.median(values) if values else math.nan
        verdict = "met" if median <= float(limit) else "NOT met"
        print(f"gate: CPU per request {RATIO} at {size}, conc {conc}: median {median:.3f} "
              f"({min(values, default=math.nan):.3f}..{max(values, default=math.nan):.3f}), "
              f"at most {limit}: {verdict}")
PY
