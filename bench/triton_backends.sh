#!/usr/bin/env bash
# The myops Triton backend (backends/triton, libtriton_myops.so, its model configured by
# two lines: the backend and the op) against the hand-written scaleshift backend
# (bench/peers/triton_scale_shift), both in the same tritonserver binary: two Tritons up
# at once, the same client (myops-loadtest --protocol kserve) sending byte-identical
# requests to each, the two taking turns in half-second slices (--duration 4 --slices 8:
# a 10% difference is otherwise lost in this machine's drift; two runs of the same peer
# measure 1.00 (0.96..1.07) so). It is bench/vs_triton.sh with --sides
# myops-backend=triton:myops,peer=triton:scaleshift: per size and concurrency the median
# over rounds, with its range, of the per-round ratios myops-backend/peer of throughput and
# of server CPU per request, and each backend's p50, p99 and CPU per request. Issue 26's
# gate: the myops backend's CPU per request at 1 KiB at most 1.10x the peer's
# (--cpu-gate 1KiB:1.10, printed as met or not; the exit status does not depend on it).
# Writes the loadtest JSONs to --out (default bench/results/triton_backends/, emptied
# first; a given folder must be empty).
#
#   bench/triton_backends.sh [--rounds 5] [--sizes 1KiB,64KiB,1MiB] [--concurrency 1,8]
#                            [--duration 4] [--slices 8] [any other bench/vs_triton.sh flag]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
defaults=(--sides "myops-backend=triton:myops,peer=triton:scaleshift" --rounds 5
          --sizes "1KiB,64KiB,1MiB" --duration 4 --slices 8 --cpu-gate 1KiB:1.10)
if [[ " $* " != *" --out "* ]]; then
  rm -rf "$here/results/triton_backends"
  defaults+=(--out "$here/results/triton_backends")
fi
exec "$here/vs_triton.sh" "${defaults[@]}" "$@"
