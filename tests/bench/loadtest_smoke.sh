#!/usr/bin/env bash
# Smoke run of myops-loadtest against the real myops-server and the echo server: closed
# loop (unary and stream) and open loop, a second each, and the Open Inference Protocol's
# ModelInfer (--protocol kserve), and the closed loop on callbacks (--driver callbacks);
# asserts zero errors and a well-formed JSON report. Then
# one short round of bench/compare.sh's comparison (echo, myops-server and the Python
# peer) through bench/compare_report.py, asserting a complete, error-free ratio table; and
# three replicas behind one target, counted per replica. No timing assertions.
#   loadtest_smoke.sh MYOPS_SERVER ECHO_SERVER LOADTEST PYTHON
set -euo pipefail
server=$1 echo_server=$2 loadtest=$3 python=$4 latency=$5
source "$(dirname "$0")/../../scripts/servers.sh"
work="$MYOPS_SERVERS_DIR"

myops_start myops "" "$server" --address 127.0.0.1:0 --devices cpu --drain-delay 0
myops=$MYOPS_ADDR
myops_start echo "" "$echo_server" --address 127.0.0.1:0
echo_addr=$MYOPS_ADDR
common=(--duration 0.4 --warmup 0.1 --max-windows 1 --quiet)  # A smoke: one short window a point.
for target in "$myops" "$echo_addr"; do
  "$loadtest" --target "$target" --concurrency 1,4 --sizes 1KiB,256KiB "${common[@]}" --json "$work/closed.json" --csv "$work/closed.csv"
  "$loadtest" --target "$target" --concurrency 2 --stream --shape 64,64 "${common[@]}" --json "$work/stream.json"
  "$loadtest" --target "$target" --rate 300 --poisson --dtype bfloat16 --shape 512 "${common[@]}" --json "$work/open.json"
  "$python" - "$work" <<'PY'
import json, sys, pathlib
work = pathlib.Path(sys.argv[1])
for name, n in (("closed", 4), ("stream", 1), ("open", 1)):
    points = json.loads((work / f"{name}.json").read_text())["points"]
    assert len(points) == n, (name, len(points))
    for p in points:
        assert p["errors"] == 0 and p["errors_by_code"] == {}, p
        assert p["requests_ok"] > 0 and p["throughput_rps"] > 0, p
        lat = p["latency_us"]
        assert 0 < lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["p99_9"] <= lat["max"] * 1.01, lat
        assert set(p["server_us"]) == {"decode", "queue", "compute", "encode", "total"}, p
rows = (work / "closed.csv").read_text().splitlines()
assert len(rows) == 5 and rows[0].startswith("target,mode,concurrency"), rows
print("loadtest reports OK")
PY
done

# --protocol kserve: the Open Inference Protocol's ModelInfer of scale_shift, alpha and beta
# as parameters and as inputs, closed and open loop; same report, no per-request timing.
"$loadtest" --target "$myops" --protocol kserve --concurrency 1,2 --sizes 1KiB,256KiB \
  "${common[@]}" --json "$work/kserve.json"
"$loadtest" --target "$myops" --protocol kserve --kserve-scalars inputs --rate 200 \
  --dtype float16 --shape 64,8 "${common[@]}" --json "$work/kserve-open.json"
"$python" - "$work" <<'PY'
import json, sys, pathlib
work = pathlib.Path(sys.argv[1])
for name, n in (("kserve", 4), ("kserve-open", 1)):
    points = json.loads((work / f"{name}.json").read_text())["points"]
    assert len(points) == n, (name, points)
    for p in points:
        assert p["protocol"] == "kserve" and p["server_us"] is None, p
        assert p["errors"] == 0 and p["requests_ok"] > 0, p
        assert p["payload_gb_per_s"] > 0 and 0 < p["latency_us"]["p50"] <= p["latency_us"]["max"], p
print("loadtest kserve reports OK")
PY
# --driver callbacks: the closed loop on gRPC's callback threads, --client-threads of them
# (counted by name while it runs), both protocols; the same reports.
"$loadtest" --target "$myops" --driver callbacks --client-threads 3 --concurrency 4 \
  --sizes 1KiB,256KiB --duration 1.5 --warmup 0.5 --max-windows 1 --quiet \
  --json "$work/callbacks.json" &
pid=$!
sleep 1
threads=$(grep -lx grpc-callback /proc/$pid/task/*/comm | wc -l)
wait $pid
[[ $threads -eq 3 ]] || { echo "loadtest --client-threads 3: $threads grpc-callback threads"; exit 1; }
"$loadtest" --target "$myops" --protocol kserve --driver callbacks --concurrency 1,8 \
  --sizes 1KiB,256KiB "${common[@]}" --json "$work/kserve-callbacks.json"
"$python" - "$work" <<'PY'
import json, sys, pathlib
work = pathlib.Path(sys.argv[1])
for name, n in (("callbacks", 2), ("kserve-callbacks", 4)):
    points = json.loads((work / f"{name}.json").read_text())["points"]
    assert len(points) == n, (name, points)
    for p in points:
        assert p["errors"] == 0 and p["requests_ok"] > 0, p
        assert p["payload_gb_per_s"] > 0 and 0 < p["latency_us"]["p50"] <= p["latency_us"]["max"], p
print("loadtest --driver callbacks OK")
PY
set +e
"$loadtest" --target "$myops" --driver callbacks --stream "${common[@]}" 2>"$work/err"
rc=$?
set -e
[[ $rc -eq 1 ]] && grep -q "no --stream" "$work/err" ||
  { echo "loadtest --driver callbacks --stream: exit $rc"; cat "$work/err"; exit 1; }
set +e
"$loadtest" --target "$myops" --protocol kserve --stream "${common[@]}" 2>"$work/err"
rc=$?
set -e
[[ $rc -eq 1 ]] && grep -q "no --stream" "$work/err" ||
  { echo "loadtest --protocol kserve --stream: exit $rc"; cat "$work/err"; exit 1; }
# A server without the model: refused before the run.
set +e
"$loadtest" --target "$echo_addr" --protocol kserve "${common[@]}" 2>"$work/err"
rc=$?
set -e
[[ $rc -eq 1 ]] && grep -q "UNIMPLEMENTED" "$work/err" ||
  { echo "loadtest --protocol kserve against the echo server: exit $rc"; cat "$work/err"; exit 1; }

# --min-requests stretches a timed window: 30 completions at 20/s take 1.5 s, not 0.5 s.
"$loadtest" --target "$myops" --rate 20 --shape 64 --duration 0.5 --min-requests 30 \
  --warmup 0.2 --max-windows 1 --quiet --json "$work/min.json"
"$python" - "$work/min.json" <<'PY'
import json, sys
(p,) = json.load(open(sys.argv[1]))["points"]
assert p["requests_ok"] >= 30 and p["seconds"] >= 1.3 and p["errors"] == 0, p
print("min-requests OK")
PY

# A server that wants a bearer token: myops-loadtest sends it with --token-file (every
# request succeeds), and without it fails at its first call, naming the status.
printf 'loadtest-token\n' >"$work/token"
myops_start auth "" "$server" --address 127.0.0.1:0 --devices cpu --drain-delay 0 \
  --auth-token-file "$work/token"
"$loadtest" --target "$MYOPS_ADDR" --token-file "$work/token" --concurrency 2 --shape 64 \
  "${common[@]}" --json "$work/auth.json"
"$python" - "$work/auth.json" <<'PY'
import json, sys
(p,) = json.load(open(sys.argv[1]))["points"]
assert p["requests_ok"] > 0 and p["errors"] == 0, p
PY
set +e
"$loadtest" --target "$MYOPS_ADDR" --concurrency 1 --shape 64 "${common[@]}" 2>"$work/err"
rc=$?
set -e
[[ $rc -eq 1 ]] && grep -q "UNAUTHENTICATED" "$work/err" ||
  { echo "loadtest without a token: exit $rc"; cat "$work/err"; exit 1; }
echo "loadtest bearer token OK"

# myops-latency interleaves ScaleShift, the generic Call of the same op, KServe ModelInfer
# and the echo floor (bench/kserve_vs_scale_shift.sh): every
# target reports a p50 at every size.
"$latency" --target "scale_shift=$myops" --call-target "call=$myops" --target "echo=$echo_addr" \
  --kserve-target "kserve=$myops" \
  --baseline scale_shift --sizes 1KiB,64KiB --max-requests 20 --warmup 1 \
  --json "$work/latency.json" >/dev/null
"$python" - "$work/latency.json" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))["results"]
got = {(r["size"], r["target"]) for r in rows if r["requests"] == 20 and r["p50_us"] > 0}
want = {(s, t) for s in ("1KiB", "64KiB") for t in ("scale_shift", "call", "echo", "kserve")}
assert got == want and len(rows) == 8, rows
print("myops-latency OK")
PY

# Three replicas behind one ipv4: target: round_robin spreads 3,000 unary requests within
# 15% of the mean and the report counts them per replica (the servers' --replica-name);
# streams are spread too, each staying on its replica; pick_first keeps to one replica.
replicas=()
for i in 0 1 2; do
  myops_start "replica$i" "" "$server" --address 127.0.0.1:0 --devices cpu --cpu-workers 1 \
    --drain-delay 0 --replica-name "replica-$i"
  replicas+=("$MYOPS_ADDR")
done
many="ipv4:$(IFS=,; echo "${replicas[*]}")"
"$loadtest" --target "$many" --concurrency 4 --requests 3000 --warmup 0.3 --quiet \
  --json "$work/replicas.json" >"$work/replicas.txt"
grep -q "replicas: replica-0 " "$work/replicas.txt" || { cat "$work/replicas.txt"; exit 1; }
"$loadtest" --target "$many" --concurrency 6 --stream --requests 600 --warmup 0.3 --quiet \
  --json "$work/replicas-stream.json" >/dev/null
"$loadtest" --target "$many" --load-balancing pick_first --concurrency 4 --requests 300 \
  --warmup 0.3 --quiet --json "$work/replicas-pick-first.json" >/dev/null
"$python" - "$work" <<'PY'
import json, sys, pathlib
work = pathlib.Path(sys.argv[1])
names = {"replica-0", "replica-1", "replica-2"}
(p,) = json.loads((work / "replicas.json").read_text())["points"]
counts = p["requests_by_replica"]
assert set(counts) == names and p["errors"] == 0, p
assert sum(counts.values()) == p["requests_ok"] >= 3000, p
mean = p["requests_ok"] / 3
assert all(abs(n - mean) <= 0.15 * mean for n in counts.values()), counts
(p,) = json.loads((work / "replicas-stream.json").read_text())["points"]
assert set(p["requests_by_replica"]) == names and p["errors"] == 0, p
(p,) = json.loads((work / "replicas-pick-first.json").read_text())["points"]
assert len(p["requests_by_replica"]) == 1 and p["errors"] == 0, p
print("loadtest per-replica report OK:", counts)
PY

# The comparison: the Python peer (grpcio + numpy) beside the two C++ servers, one round.
repo="$(cd "$(dirname "$0")/../.." && pwd)"
myops_start python "" "$python" "$repo/bench/peers/python_server.py" --address 127.0.0.1:0
python_addr=$MYOPS_ADDR
mkdir -p "$work/compare/round1"
for pair in "echo=$echo_addr" "myops=$myops" "python=$python_addr"; do
  "$loadtest" --target "${pair#*=}" --concurrency 1,4 --sizes 1KiB "${common[@]}" \
    --json "$work/compare/round1/${pair%%=*}-1KiB.json"
done
"$python" "$repo/bench/compare_report.py" "$work/compare"
"$python" - "$work/compare/compare.json" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
assert report["rounds"] == 1, report
rows = report["rows"]
assert [(r["payload_bytes"], r["concurrency"]) for r in rows] == [(1024, 1), (1024, 4)], rows
for r in rows:
    assert r["errors"] == {"echo": 0, "myops": 0, "python": 0}, r
    for key in ("myops_p50_vs_echo", "myops_rps_vs_echo", "myops_rps_vs_python"):
        assert r[key]["rounds"] == 1 and r[key]["median"] > 0, (key, r)
print("compare report OK")
PY
