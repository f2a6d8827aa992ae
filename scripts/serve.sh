#!/usr/bin/env bash
# Bootstraps, builds and runs myops-server in the foreground on 127.0.0.1:50051 (gRPC:
# myops.v1 and the Open Inference Protocol) and 127.0.0.1:8080 (the Open Inference
# Protocol over REST); override with MYOPS_ADDRESS / MYOPS_HTTP_ADDRESS or --address /
# --http-address. Extra arguments are server flags (see --help).
set -euo pipefail
source "$(dirname "$0")/env.sh"
myops_build >&2
export MYOPS_ADDRESS="${MYOPS_ADDRESS:-127.0.0.1:50051}"
export MYOPS_HTTP_ADDRESS="${MYOPS_HTTP_ADDRESS:-127.0.0.1:8080}"
exec "$MYOPS_BUILD_DIR/server/myops-server" "$@"
