#!/usr/bin/env bash
# The real myops-server called through myops-cli: health, info, scale-shift with .npy
# files checked against NumPy, a bad request's exit status and message, then SIGTERM and
# exit status 0.
#   cli_e2e_test.sh MYOPS_SERVER MYOPS_CLI PYTHON
set -euo pipefail
server=$1 cli=$2 python=$3
source "$(dirname "$0")/../../scripts/servers.sh"
work="$MYOPS_SERVERS_DIR"
myops_start server "" "$server" --address 127.0.0.1:0 --devices cpu --drain-delay 0
addr=$MYOPS_ADDR pid=$MYOPS_PID

"$cli" --target "$addr" health | grep -q SERVING
"$cli" --target "$addr" info | grep -q "myops::scale_shift"
"$python" -c "import numpy as np; np.save('$work/x.npy', np.arange(-6, 6, dtype=np.float32).reshape(3, 4))"
"$cli" --target "$addr" scale-shift --input "$work/x.npy" --output "$work/y.npy" --alpha 2 --beta 0.5 | grep -q "server"
"$python" -c "
import numpy as np
x, y = np.load('$work/x.npy'), np.load('$work/y.npy')
assert y.dtype == np.float32 and y.shape == (3, 4), (y.dtype, y.shape)
assert (y == x * np.float32(2) + np.float32(0.5)).all(), y
"
set +e
"$cli" --target "$addr" scale-shift --shape 4 --device cuda:3 >"$work/out" 2>"$work/err"
rc=$?
set -e
[[ $rc -eq 1 ]] || { echo "expected exit 1, got $rc"; exit 1; }
grep -q "FAILED_PRECONDITION" "$work/err" || { cat "$work/err"; exit 1; }
grep -q 'device "cuda:3" is not available on this server' "$work/err" || { cat "$work/err"; exit 1; }

kill -TERM "$pid"
wait "$pid"
echo "myops-cli against myops-server: OK"
