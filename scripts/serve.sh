#!/usr/bin/env bash
# Bootstraps, builds and runs myops-server in the foreground on 127.0.0.1:50051 (override
# with MYOPS_ADDRESS or --address). Extra arguments are server flags (see --help).
set -euo pipefail
source "$(dirname "$0")/env.sh"
myops_build >&2
export MYOPS_ADDRESS="${MYOPS_ADDRESS:-127.0.0.1:50051}"
exec "$MYOPS_BUILD_DIR/server/myops-server" "$@"
