# Sourced by benchmark and test scripts: starts servers that print "listening on HOST:PORT"
# (myops-server, echo_server, the Python peer) on free ports and stops them on exit.
#
#   source scripts/servers.sh
#   myops_start NAME "" build/server/myops-server --address 127.0.0.1:0
#   echo "$MYOPS_ADDR $MYOPS_PID"          # where it listens, its process id
#   myops_start NAME /usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 CMD...
# Servers are children of the calling shell (so `wait $MYOPS_PID` gives the exit status).
# Logs go to $MYOPS_SERVERS_DIR/NAME.log. Servers still running are killed on exit.
MYOPS_SERVERS_DIR="$(mktemp -d)"

myops_stop_all() {
  local pid
  for pid in $(cat "$MYOPS_SERVERS_DIR"/*.pid 2>/dev/null); do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$MYOPS_SERVERS_DIR"
}
trap myops_stop_all EXIT

# myops_start NAME PRELOAD CMD...: sets MYOPS_ADDR and MYOPS_PID once the server listens
# (30 s at most; returns 1 with its log on stderr otherwise).
myops_start() {
  local name="$1" preload="$2"
  shift 2
  LD_PRELOAD="$preload" "$@" >"$MYOPS_SERVERS_DIR/$name.log" 2>&1 &
  MYOPS_PID=$!
  echo "$MYOPS_PID" >"$MYOPS_SERVERS_DIR/$name.pid"
  for _ in $(seq 300); do
    MYOPS_ADDR="$(grep -oE 'listening on [0-9.]+:[0-9]+' "$MYOPS_SERVERS_DIR/$name.log" | head -n1 | awk '{print $3}' || true)"
    [ -n "$MYOPS_ADDR" ] && return 0
    sleep 0.1
  done
  echo "$name did not start:" >&2
  cat "$MYOPS_SERVERS_DIR/$name.log" >&2
  return 1
}
