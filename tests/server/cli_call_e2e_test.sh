#!/usr/bin/env bash
# The real myops-server through myops-cli's ops and call commands and myops-loadtest's
# --op mode: the listing shows myops::scale_shift, a call of it with a .npy tensor and a
# keyword equals NumPy's alpha * x + beta, a bad argument exits 1 naming it, a short --op
# load (unary and stream) runs without errors; then, with the test operator library, an
# int list in, an int64 tensor out as .npy, and a tuple and a str out.
#   cli_call_e2e_test.sh MYOPS_SERVER MYOPS_CLI MYOPS_LOADTEST PYTHON TEST_OPS_LIBRARY
set -euo pipefail
server=$1 cli=$2 loadtest=$3 python=$4 test_ops=$5
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

myops_start ops "" "$server" --address 127.0.0.1:0 --devices cpu --drain-delay 0 \
  --load-library "$test_ops" --ops 'myops_test::*'
"$cli" --target "$MYOPS_ADDR" call myops_test::filled [2,3] fill=-4 repeat=2 \
  --out-prefix "$work/f" >"$work/out"
grep -q "^output 0    int64 \[4, 3\] (96 bytes): \[-4, -4," "$work/out" || { cat "$work/out"; fail "filled"; }
"$python" -c "
import numpy as np
f = np.load('$work/f0.npy')
assert f.dtype == np.int64 and f.shape == (4, 3) and (f == -4).all(), f
"
"$cli" --target "$MYOPS_ADDR" call myops_test::minmax "$work/x.npy" >"$work/out"
grep -q "^output 0    float32 \[\] (4 bytes): \[-3\]" "$work/out" &&
  grep -q "^output 1    float32 \[\] (4 bytes): \[3\]" "$work/out" || { cat "$work/out"; fail "minmax"; }
"$cli" --target "$MYOPS_ADDR" call myops_test::describe 2x3:float32 str:shape= upper=true >"$work/out"
grep -q '^output 0    "SHAPE=2D"' "$work/out" || { cat "$work/out"; fail "describe"; }
echo "myops-cli ops/call and myops-loadtest --op against myops-server: OK"
