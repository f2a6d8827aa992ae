#!/usr/bin/env bash
# The real myops-server called through myops-cli: health, info, scale-shift with .npy
# files checked against NumPy, a bad request's exit status and message, then SIGTERM and
# exit status 0; then two replicas behind one target; then a bearer token
# (--auth-token-file / --token-file); then TLS and mutual TLS against TLS servers.
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

# Two replicas behind one ipv4: target: the CLI names the replica that served it, with
# either balancing policy (which replica serves a one-call process's call is gRPC's pick).
myops_start one "" "$server" --address 127.0.0.1:0 --devices cpu --drain-delay 0 --replica-name e2e-one
one=$MYOPS_ADDR
myops_start two "" "$server" --address 127.0.0.1:0 --devices cpu --drain-delay 0 --replica-name e2e-two
two=$MYOPS_ADDR
"$cli" --target "$one" scale-shift --shape 4 | grep -q "^server      replica e2e-one | device cpu"
for policy in round_robin pick_first; do
  "$cli" --target "ipv4:$one,$two" --load-balancing "$policy" scale-shift --shape 4 >"$work/out"
  grep -Eq "^server      replica e2e-(one|two) \| device cpu" "$work/out" || { cat "$work/out"; exit 1; }
done
set +e
"$cli" --target "$one" --load-balancing random health >/dev/null 2>"$work/err"
rc=$?
set -e
[[ $rc -ne 0 ]] && grep -q "load-balancing" "$work/err" || { echo "exit $rc"; cat "$work/err"; exit 1; }
echo "myops-cli over two replicas: OK"

# Bearer token: myops-cli sends the server's token with --token-file. Health needs none
# (probes); info and scale-shift are UNAUTHENTICATED without it or with a wrong one, and
# the message never shows what was sent. An empty token file stops the server at startup
# with a message naming the file; an unreadable --token-file stops the CLI likewise.
printf 'e2e-token.42\n' >"$work/token"
printf 'not-the-token\n' >"$work/wrong"
myops_start auth "" "$server" --address 127.0.0.1:0 --devices cpu --drain-delay 0 \
  --auth-token-file "$work/token"
auth=$MYOPS_ADDR
"$cli" --target "$auth" health | grep -qx SERVING
"$cli" --target "$auth" --token-file "$work/token" info | grep -q "myops::scale_shift"
"$cli" --target "$auth" --token-file "$work/token" scale-shift --shape 4 | grep -q "server"
for token_args in "" "--token-file $work/wrong"; do
  for command in info "scale-shift --shape 4"; do
    set +e
    # shellcheck disable=SC2086
    "$cli" --target "$auth" $token_args $command >/dev/null 2>"$work/err"
    rc=$?
    set -e
    [[ $rc -eq 1 ]] && grep -q "UNAUTHENTICATED" "$work/err" &&
      grep -q 'authorization: Bearer <token>' "$work/err" && ! grep -q "not-the-token" "$work/err" ||
      { echo "token \"$token_args\", $command: exit $rc"; cat "$work/err"; exit 1; }
  done
done
set +e
"$cli" --target "$auth" --token-file "$work/absent" info >/dev/null 2>"$work/err"
absent=$?
: >"$work/empty"
"$server" --address 127.0.0.1:0 --devices cpu --auth-token-file "$work/empty" >/dev/null 2>"$work/err2"
empty=$?
set -e
[[ $absent -eq 1 ]] && grep -q -- "--token-file: cannot read \"$work/absent\"" "$work/err" ||
  { echo "absent --token-file: exit $absent"; cat "$work/err"; exit 1; }
[[ $empty -eq 1 ]] && grep -q -- "--auth-token-file: \"$work/empty\" holds no token" "$work/err2" ||
  { echo "empty --auth-token-file: exit $empty"; cat "$work/err2"; exit 1; }
echo "bearer token OK"

# TLS: a self-signed certificate for 127.0.0.1 and localhost; the CLI trusts it with
# --tls-ca (and presents it with --tls-cert/--tls-key for mutual TLS), fails without it,
# and names an unreadable file precisely. openssl is a test dependency (scripts/bootstrap.sh
# installs it): without it the test fails rather than passing with TLS unchecked.
command -v openssl >/dev/null || { echo "openssl not found (scripts/bootstrap.sh installs it)"; exit 1; }
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost \
    -addext subjectAltName=DNS:localhost,IP:127.0.0.1 \
    -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null
myops_start tls "" "$server" --address 127.0.0.1:0 --devices cpu --drain-delay 0 \
  --tls-cert "$work/cert.pem" --tls-key "$work/key.pem"
tls=$MYOPS_ADDR
"$cli" --target "$tls" --tls-ca "$work/cert.pem" health | grep -qx SERVING
"$cli" --target "localhost:${tls##*:}" --tls-ca "$work/cert.pem" --tls-server-name localhost \
  info | grep -q "myops::scale_shift"
set +e
"$cli" --target "$tls" --deadline-ms 3000 health >/dev/null 2>"$work/err"
plain=$?
"$cli" --target "$tls" --tls-ca "$work/absent.pem" health >/dev/null 2>"$work/err2"
absent=$?
set -e
[[ $plain -eq 1 ]] || { echo "plaintext against TLS: expected exit 1, got $plain"; exit 1; }
[[ $absent -eq 1 ]] && grep -q -- '--tls-ca: cannot read' "$work/err2" ||
  { echo "absent --tls-ca: exit $absent"; cat "$work/err2"; exit 1; }
# Mutual TLS: the same certificate is the client CA and the client's certificate.
myops_start mtls "" "$server" --address 127.0.0.1:0 --devices cpu --drain-delay 0 \
  --tls-cert "$work/cert.pem" --tls-key "$work/key.pem" --tls-client-ca "$work/cert.pem"
mtls=$MYOPS_ADDR
"$cli" --target "$mtls" --tls-ca "$work/cert.pem" --tls-cert "$work/cert.pem" \
  --tls-key "$work/key.pem" health | grep -qx SERVING
set +e
"$cli" --target "$mtls" --tls-ca "$work/cert.pem" --deadline-ms 3000 health >/dev/null 2>&1
anonymous=$?
set -e
[[ $anonymous -eq 1 ]] || { echo "mTLS without a client certificate: exit $anonymous"; exit 1; }
echo "cli TLS and mutual TLS OK"
