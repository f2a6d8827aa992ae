#!/usr/bin/env bash
# Server round trip from a GPU bundle (bench/gpu/bundle.sh), run by bench/gpu/check.sh:
# starts the bundle's myops-server on a free port, times scale_shift float32 requests of
# 1 KiB, 16 MiB and 256 MiB through myops-cli on cuda and on cpu, prints one line per
# device and size (min/median of the round trip and of the server's stages), and checks
# that the server exits 0 on SIGTERM. LD_LIBRARY_PATH must already find the libraries.
#
#   bench/gpu/serve.sh BUNDLE [--cpu-only]
set -euo pipefail
BUNDLE="$1"
DEVICES=(cuda cpu)
[ "${2:-}" = --cpu-only ] && DEVICES=(cpu)
LOG="$(mktemp)"
"$BUNDLE/bin/myops-server" --address 127.0.0.1:0 --devices auto --drain-delay 0 \
  --max-message-bytes 1073741824 >"$LOG" 2>&1 &
PID=$!
trap 'kill -TERM $PID 2>/dev/null || true' EXIT
for _ in $(seq 600); do
  grep -q "listening on" "$LOG" && break
  kill -0 "$PID" 2>/dev/null || { cat "$LOG"; echo "serve.sh: the server exited" >&2; exit 1; }
  sleep 0.1
done
cat "$LOG"
ADDR="$(grep -oE 'listening on [0-9.]+:[0-9]+' "$LOG" | awk '{print $3}')"
[ -n "$ADDR" ] || { echo "serve.sh: the server did not start listening" >&2; exit 1; }
CLI=("$BUNDLE/bin/myops-cli" --target "$ADDR" --deadline-ms 120000)
"${CLI[@]}" info
# name, float32 elements, repeats
for size in "1KiB 256 50" "16MiB 4194304 10" "256MiB 67108864 5"; do
  read -r name numel repeat <<<"$size"
  for dev in "${DEVICES[@]}"; do
    line="$("${CLI[@]}" scale-shift --device "$dev" --shape "$numel" --repeat "$repeat" |
      grep '^repeat')"
    echo "$dev $name: $line"
  done
done
trap - EXIT
kill -TERM "$PID"
wait "$PID" || { echo "serve.sh: the server exited $? after SIGTERM" >&2; exit 1; }
echo "server exited 0 after SIGTERM"
