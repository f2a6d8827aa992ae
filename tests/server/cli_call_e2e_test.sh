#!/usr/bin/env bash
# The real myops-server through myops-cli's ops and call commands and myops-loadtest's
# --op mode: the listing shows myops::scale_shift, a call of it with a .npy tensor and a
# keyword equals NumPy's alpha * x + beta, a bad argument exits 1 naming it, and a short
# --op load (unary and stream) runs without errors.
#   cli_call_e2e_test.sh MYOPS_SERVER MYOPS_CLI MYOPS_LOADTEST PYTHON
set -euo pipefail
server=$1 cli=$2 loadtest=$3 python=$4
source "$(dirname "$0")/../../scripts/servers.sh"
work="$MYOPS_SERVERS_DIR"
myops_start server "" "$server" --address 127.0.0.1:0 --devices cpu --drain-delay 0
addr=$MYOPS_ADDR

fail() { echo "FAIL: $*" >&2; exit 1; }

"$cli" --target "$addr" ops >"$work/ops"
cat "$work/ops"
grep -qx "myops::scale_shift(Tensor x, float alpha, float beta) -> Tensor" "$work/ops" ||
  fail "ops does not list myops::scale_shift's schema"
grep -A1 -x "myops::scale_shift(Tensor x, float alpha, float beta) -> Tensor" "$work/ops" |
  grep -q "served on cpu" || fail "ops does not say scale_shift is served on cpu"
grep -q "not served: " "$work/ops" || fail "ops does not say why the in-place op is not served"

"$python" -c "import numpy as np; np.save('$work/x.npy', np.linspace(-3, 3, 12, dtype=np.float32).reshape(3, 4))"
"$cli" --target "$addr" call myops::scale_shift "$work/x.npy" 2.0 beta=-0.5 \
  --out-prefix "$work/y" >"$work/out"
cat "$work/out"
grep -q "^output 0    float32 \[3, 4\] (48 bytes)" "$work/out" || fail "no output summary"
grep -q "^wrote       $work/y0.npy" "$work/out" || fail "no output file"
"$python" -c "
import numpy as np
x, y = np.load('$work/x.npy'), np.load('$work/y0.npy')
assert y.dtype == np.float32 and y.shape == (3, 4), (y.dtype, y.shape)
assert (y == x * np.float32(2) + np.float32(-0.5)).all(), y
"

set +e
"$cli" --target "$addr" call myops::scale_shift 4:float32 two 1.0 >/dev/null 2>"$work/err"
rc=$?
set -e
[[ $rc -eq 1 ]] || fail "bad argument: exit $rc, expected 1"
grep -q "INVALID_ARGUMENT" "$work/err" && grep -q "alpha" "$work/err" ||
  { cat "$work/err"; fail "bad argument: no INVALID_ARGUMENT naming alpha"; }

for mode in "" "--stream"; do
  # shellcheck disable=SC2086
  "$loadtest" --target "$addr" --op myops::scale_shift --arg 256:float32 --arg 2.0 \
    --arg beta=1.0 --concurrency 2 $mode --duration 0.5 --warmup 0.1 --quiet \
    --json "$work/load.json" >"$work/load.txt"
  cat "$work/load.txt"
  grep -q "op myops::scale_shift" "$work/load.txt" || fail "loadtest header"
  "$python" - "$work/load.json" <<'PY'
import json, sys
(p,) = json.load(open(sys.argv[1]))["points"]
assert p["op"] == "myops::scale_shift" and p["args"] == ["256:float32", "2.0", "beta=1.0"], p
assert p["requests_ok"] > 0 and p["errors"] == 0 and p["payload_bytes"] == 1024, p
PY
done
echo "myops-cli ops/call and myops-loadtest --op against myops-server: OK"
