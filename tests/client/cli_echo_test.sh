#!/usr/bin/env bash
# End-to-end test of the real binaries: starts echo_server on a free port, runs myops-cli
# info / health / scale-shift against it (and its error paths), checks .npy files against
# NumPy (PYTHON must have it: scripts/bootstrap.sh installs it; a missing NumPy fails the
# test rather than passing it unchecked), then stops the server with SIGTERM and expects
# exit status 0.
#   cli_echo_test.sh ECHO_SERVER MYOPS_CLI PYTHON
set -euo pipefail

echo_server=$1
cli=$2
python=$3
work=$(mktemp -d)
server_pid=
cleanup() {
  if [[ -n $server_pid ]] && kill -0 "$server_pid" 2>/dev/null; then kill -KILL "$server_pid"; fi
  rm -rf "$work"
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# Runs the CLI, keeping stdout/stderr in $work/out and $work/err; sets $rc.
run_cli() {
  set +e
  "$cli" "$@" >"$work/out" 2>"$work/err"
  rc=$?
  set -e
  echo "\$ myops-cli $*  -> exit $rc"
  cat "$work/out" "$work/err"
}

expect_ok() {
  run_cli "$@"
  [[ $rc -eq 0 ]] || fail "myops-cli $* exited $rc"
}

expect_in() {  # expect_in FILE TEXT
  grep -qF -- "$2" "$work/$1" || fail "expected '$2' in $1"
}

"$echo_server" --address 127.0.0.1:0 >"$work/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 100); do
  grep -q "listening on" "$work/server.log" && break
  kill -0 "$server_pid" 2>/dev/null || fail "echo_server exited: $(cat "$work/server.log")"
  sleep 0.1
done
address=$(sed -n 's/^echo_server listening on //p' "$work/server.log")
[[ $address =~ ^127\.0\.0\.1:[0-9]+$ && $address != *:0 ]] || fail "bad address '$address'"
echo "echo_server at $address"

expect_ok --target "$address" info
expect_in out "myops       echo"
expect_in out "operator    myops::scale_shift"

MYOPS_TARGET=$address expect_ok health
expect_in out "SERVING"

expect_ok scale-shift --target "$address" --shape 4,5
expect_in out "output      float32 [4, 5] (80 bytes)"
expect_in out "server      device echo"
expect_in out "round trip"

expect_ok scale-shift --target "$address" --shape 3 --dtype bfloat16 --repeat 5 --seed 9
expect_in out "output      bfloat16 [3] (6 bytes)"
expect_in out "repeat 5"

expect_ok scale-shift --target "$address" --shape 2,2 --dtype int16 --seed 3
expect_in out "output      int16 [2, 2] (8 bytes)"
expect_ok scale-shift --target "$address" --shape 3 --dtype bool
expect_in out "output      bool [3] (3 bytes)"

run_cli scale-shift --target "$address" --shape 2,-3
[[ $rc -eq 1 ]] || fail "negative dim: exit $rc, expected 1"
expect_in err "INVALID_ARGUMENT"

run_cli --deadline-ms 2000 scale-shift --target 127.0.0.1:1 --shape 2
[[ $rc -eq 1 ]] || fail "unreachable server: exit $rc, expected 1"
expect_in err "UNAVAILABLE"

run_cli health --target "$address" --service no.such.Service
[[ $rc -eq 1 ]] || fail "unknown service: exit $rc, expected 1"
expect_in err "NOT_FOUND"

run_cli scale-shift --target "$address" --input "$work/missing.npy"
[[ $rc -eq 1 ]] || fail "missing input: exit $rc, expected 1"
expect_in err "NOT_FOUND"

expect_ok scale-shift --target "$address" --shape 2,3 --dtype float64 --output "$work/y.npy"
[[ -s $work/y.npy ]] || fail "no y.npy written"

if ! "$python" -c 'import numpy' 2>/dev/null; then
  fail "$python cannot import numpy (scripts/bootstrap.sh installs it)"
fi
# NumPy writes the inputs and reads what myops-cli wrote (the echo returns the input).
for dtype in float32 float64 float16 int8 int16 int32 int64 uint8 bool; do
  "$python" -c "import numpy as np; d = np.dtype('$dtype'); np.save('$work/x_$dtype.npy', \
    (np.arange(24).reshape(2, 3, 4) / 7 if d.kind == 'f' else \
     np.arange(-12, 12).reshape(2, 3, 4)).astype(d))"
  expect_ok scale-shift --target "$address" --input "$work/x_$dtype.npy" \
    --output "$work/y_$dtype.npy"
  "$python" -c "import numpy as np, sys; x = np.load('$work/x_$dtype.npy'); \
    y = np.load('$work/y_$dtype.npy'); \
    sys.exit(0 if x.dtype == y.dtype and x.shape == y.shape and (x == y).all() else 1)" ||
    fail "NumPy disagrees with myops-cli about $dtype .npy files"
done
"$python" -c "import numpy as np; np.save('$work/f.npy', np.asfortranarray(np.ones((2, 3), 'f4')))"
run_cli scale-shift --target "$address" --input "$work/f.npy"
[[ $rc -eq 1 ]] || fail "fortran-order input: exit $rc, expected 1"
expect_in err "Fortran order"

kill -TERM "$server_pid"
set +e
wait "$server_pid"
server_rc=$?
set -e
server_pid=
[[ $server_rc -eq 0 ]] || fail "echo_server exited $server_rc after SIGTERM"
echo "PASS"
