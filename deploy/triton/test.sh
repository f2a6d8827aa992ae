#!/usr/bin/env bash
# Builds the Triton image (deploy/Dockerfile's `triton` target: NVIDIA Triton with the
# myops backend and deploy/triton/models) and tests it for real: the image's HEALTHCHECK,
# scale_shift over the published HTTP and gRPC ports (values checked with tritonclient),
# and a SIGTERM with requests in flight (every one answered, exit status 0). Not part of
# CI, like deploy/test.sh. Exit status is non-zero if anything fails.
#   deploy/triton/test.sh                 # docker, or podman when no Docker daemon answers
#   MYOPS_DOCKER=podman MYOPS_IMAGE=myops-triton:test MYOPS_SKIP_BUILD=1 deploy/triton/test.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
image=${MYOPS_IMAGE:-myops-triton:test}
ctr=myops-triton-test-$$
python=${MYOPS_VENV:-$HOME/.cache/myops/venv-torch2.11.0}/bin/python  # has tritonclient
log() { echo "[deploy/triton/test] $*" >&2; }
. deploy/engine.sh
fail() { log "FAIL: $*"; "$engine" logs "$ctr" 2>&1 | tail -n 40 >&2 || true; exit 1; }
cleanup() { "$engine" rm -f "$ctr" >/dev/null 2>&1 || true; }
trap cleanup EXIT

build_image "$image" --target triton

http_port=$(free_port) grpc_port=$(free_port)
secure=(--read-only --cap-drop ALL --security-opt no-new-privileges)
[ "$podman" = yes ] && secure+=(--read-only-tmpfs=false)
# Published ports where the engine maps them; with host networking (podman here) Triton
# is told the ports instead.
"$engine" run -d --name "$ctr" "${secure[@]}" --network host "$image" \
  --http-address=127.0.0.1 --http-port="$http_port" --grpc-address=127.0.0.1 \
  --grpc-port="$grpc_port" --allow-metrics=false \
  2> >(grep -v 'systemd connection' >&2) >/dev/null
[ "$("$engine" exec "$ctr" id -u)" = 10001 ] || fail "Triton does not run as uid 10001"

healthy() {
  if [ "$podman" = yes ]; then
    # The image's probe reads port 8000: ask the configured port the same way.
    "$engine" exec "$ctr" bash -c "exec 3<>/dev/tcp/127.0.0.1/$http_port && printf 'GET /v2/health/ready HTTP/1.0\r\n\r\n' >&3 && head -n 1 <&3 | grep -q ' 200 '"
  else
    [ "$("$engine" inspect -f '{{.State.Health.Status}}' "$ctr")" = healthy ]
  fi
}
for _ in $(seq 90); do healthy 2>/dev/null && break; sleep 1; done
healthy || fail "Triton never became ready"
log "ready: model scale_shift loaded through the myops backend"

"$python" - "$http_port" "$grpc_port" <<'PY' || fail "scale_shift over the published ports"
import sys
import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
x = np.arange(-8, 8, dtype=np.float32).reshape(2, 8)
for module, url in ((httpclient, f"127.0.0.1:{sys.argv[1]}"), (grpcclient, f"127.0.0.1:{sys.argv[2]}")):
    client = module.InferenceServerClient(url)
    inp = module.InferInput("x", list(x.shape), "FP32")
    inp.set_data_from_numpy(x)
    y = client.infer("scale_shift", [inp], parameters={"alpha": 2.0, "beta": 1.0}).as_numpy("output__0")
    assert (y == 2 * x + 1).all(), y
PY
log "scale_shift over HTTP and gRPC: values correct"

# SIGTERM with requests in flight: each client loops until the server goes; every request
# sent before must be answered in full, later ones refused (no model, no server).
"$python" - "$grpc_port" "$engine" "$ctr" <<'PY' || fail "SIGTERM under load"
import subprocess, sys, threading
import numpy as np
import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException
port, engine, ctr = sys.argv[1:]
x = np.arange(256 * 1024, dtype=np.float32).reshape(1, -1)
outcomes, lock, answered = [], threading.Lock(), threading.Semaphore(0)
def loop():
    client, first = grpcclient.InferenceServerClient(f"127.0.0.1:{port}"), True
    inp = grpcclient.InferInput("x", list(x.shape), "FP32")
    inp.set_data_from_numpy(x)
    while True:
        try:
            y = client.infer("scale_shift", [inp], parameters={"alpha": 2.0, "beta": 1.0},
                             client_timeout=60).as_numpy("output__0")
            outcome = "ok" if (y == 2 * x + 1).all() else "wrong"
        except InferenceServerException as e:
            refused = e.status() in ("StatusCode.NOT_FOUND", "StatusCode.UNAVAILABLE")
            outcome = "refused" if refused else f"lost: {e.status()}"
        with lock:
            outcomes.append(outcome)
        if first:
            answered.release(); first = False
        if outcome != "ok":
            return
threads = [threading.Thread(target=loop) for _ in range(4)]
for t in threads: t.start()
for _ in threads: assert answered.acquire(timeout=60)
stop = subprocess.run([engine, "stop", "-t", "40", ctr], capture_output=True)
for t in threads: t.join(90); assert not t.is_alive(), "a client never got an answer"
code = subprocess.run([engine, "inspect", "-f", "{{.State.ExitCode}}", ctr],
                      capture_output=True, text=True).stdout.strip()
print(f"SIGTERM: {outcomes.count('ok')} answered, {outcomes.count('refused')} refused, exit {code}")
assert code == "0", code
assert outcomes.count("refused") == len(threads) and set(outcomes) == {"ok", "refused"}, outcomes
PY
log "SIGTERM under load: nothing lost, exit 0"
log "PASS"
