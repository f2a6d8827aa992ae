#!/usr/bin/env bash
# The Open Inference Protocol's cost over myops.v1, in one run: myops-latency sends
# myops::scale_shift to one myops-server three ways, myops.v1 ScaleShift (typed), myops.v1
# Call (generic: the pipeline KServe shares) and KServe ModelInfer (raw_input_contents,
# alpha and beta as parameters), and the same payload to the bare echo server (the gRPC
# floor), at concurrency 1, interleaving them request by request so that machine noise
# hits them alike. Repeats that for --rounds runs and prints, per payload, each round's
# p50s and the median ratios ModelInfer/ScaleShift (issue 11's target: at most 1.15),
# ModelInfer/Call (the protocol's own cost) and Call/ScaleShift (the generic pipeline's).
# Then where the time goes: each kind alone for --profile-requests requests, with the
# server's stages per request from the model's ModelStatistics before and after (every
# front end records there) and the rest of the p50 (client, transport, the server's
# handler outside the pipeline). Writes the JSONs and summary.json to
# bench/results/kserve_vs_scale_shift/.
#
#   bench/kserve_vs_scale_shift.sh [--rounds 5] [--sizes 1KiB,16MiB] [--profile-requests 500]
#                                  [myops-latency flags]
set -euo pipefail
source "$(dirname "$0")/../scripts/env.sh"
myops_build --target myops-server myops-latency myops_echo_server >/dev/null
B="$MYOPS_BUILD_DIR"
OUT="$MYOPS_REPO/bench/results/kserve_vs_scale_shift"
rounds=5
sizes=1KiB,16MiB
profile=500
extra=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) rounds="$2"; shift 2 ;;
    --sizes) sizes="$2"; shift 2 ;;
    --profile-requests) profile="$2"; shift 2 ;;
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
echo_addr=$MYOPS_ADDR
for round in $(seq "$rounds"); do
  "$B/bench/latency/myops-latency" --target "scale_shift=$myops" --call-target "call=$myops" \
    --kserve-target "kserve=$myops" --target "echo=$echo_addr" --baseline scale_shift \
    --sizes "$sizes" --max-requests 2000 --budget-bytes 4294967296 \
    --json "$OUT/round_$round.json" "${extra[@]}" >/dev/null
  echo "round $round done" >&2
done

# The model's statistics (Triton's ModelStatistics) as JSON into $1.
stats() {
  "$MYOPS_VENV/bin/python" - "$myops" "$1" <<'PY'
import json, sys
import tritonclient.grpc as grpcclient
client = grpcclient.InferenceServerClient(sys.argv[1])
s = client.get_inference_statistics("myops::scale_shift", as_json=True)["model_stats"][0]
open(sys.argv[2], "w").write(json.dumps(s))
PY
}
IFS=, read -ra size_list <<<"$sizes"
for size in "${size_list[@]}"; do
  for kind in scale_shift call kserve; do
    case $kind in
      scale_shift) flag=(--target "$kind=$myops") ;;
      call) flag=(--call-target "$kind=$myops") ;;
      kserve) flag=(--kserve-target "$kind=$myops") ;;
    esac
    stats "$OUT/stats_before_${kind}_$size.json"
    "$B/bench/latency/myops-latency" "${flag[@]}" --baseline "$kind" --sizes "$size" \
      --max-requests "$profile" --budget-bytes 4294967296 --warmup 0 \
      --json "$OUT/profile_${kind}_$size.json" >/dev/null
    stats "$OUT/stats_after_${kind}_$size.json"
  done
  echo "profile $size done" >&2
done

"$MYOPS_VENV/bin/python" - "$OUT" "$sizes" "$rounds" <<'PY'
import json, pathlib, statistics, sys
out, sizes, rounds = pathlib.Path(sys.argv[1]), sys.argv[2].split(","), int(sys.argv[3])
load = lambda name: json.loads((out / name).read_text())
rows = [load(f"round_{r}.json")["results"] for r in range(1, rounds + 1)]
KINDS = ("echo", "scale_shift", "call", "kserve")
# The pipeline's stages under Triton's names (server/README.md, "Statistics").
STAGES = {"decode": "compute_input", "queue": "queue", "compute": "compute_infer",
          "encode": "compute_output", "total": "success"}
fmt = lambda xs: " ".join(f"{x:.1f}" for x in xs)
span = lambda xs: f"{statistics.median(xs):.3f} ({min(xs):.2f}..{max(xs):.2f})"
summary = []
for size in sizes:
    p50 = {t: [next(x["p50_us"] for x in rs if x["size"] == size and x["target"] == t)
               for rs in rows] for t in KINDS}
    print(f"{size}: p50 us per round (interleaved)")
    for kind in KINDS:
        print(f"  {kind:>11}  {fmt(p50[kind])}")
    ratios = {}
    for num, den in (("kserve", "scale_shift"), ("kserve", "call"), ("call", "scale_shift"),
                     ("scale_shift", "echo")):
        r = [a / b for a, b in zip(p50[num], p50[den])]
        ratios[f"{num}/{den}"] = {"median": statistics.median(r), "rounds": r}
        met = ""
        if (num, den) == ("kserve", "scale_shift"):
            met = "  target 1.15: " + ("met" if statistics.median(r) <= 1.15 else "NOT met")
        print(f"  {num}/{den}: {span(r)}{met}")
    profile = {}
    print(f"  each alone: server us/request (ModelStatistics) and the rest of the p50")
    for kind in ("scale_shift", "call", "kserve"):
        before, after = (load(f"stats_{w}_{kind}_{size}.json")["inference_stats"]
                         for w in ("before", "after"))
        n = int(after["success"]["count"]) - int(before["success"]["count"])
        us = {s: (int(after[t]["ns"]) - int(before[t]["ns"])) / n / 1000 for s, t in STAGES.items()}
        (alone,) = load(f"profile_{kind}_{size}.json")["results"]
        us["p50"] = alone["p50_us"]
        us["outside_server"] = alone["p50_us"] - us["total"]
        profile[kind] = us
        print(f"  {kind:>11}: p50 {us['p50']:.1f} = server {us['total']:.1f} (decode "
              f"{us['decode']:.1f}, queue {us['queue']:.1f}, compute {us['compute']:.1f}, "
              f"encode {us['encode']:.1f}) + outside {us['outside_server']:.1f}")
    summary.append({"payload": size, "p50_us": p50, "ratios": ratios, "profile_us": profile})
(out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
PY
