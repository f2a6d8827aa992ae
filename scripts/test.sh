#!/usr/bin/env bash
# The test command (what CI runs, through .ci/run), in stages:
#   bootstrap  scripts/bootstrap.sh: Debian packages, the virtualenv (reused when present)
#   layers     scripts/check_layers.py: each server layer includes only the layers below it
#   build      configure and build everything (build/)
#   ctest      every GoogleTest suite and end-to-end test, through CTest
#   pytest     the Python tests: those that allow it on every core, then the rest one at a
#              time (scripts/pytest.sh)
#   san-build  the sanitized tree (build-san, clang-14, ASan+UBSan; scripts/env.sh): what
#              CTest runs and every fuzz target, the server's sources under clang's
#              thread-safety analysis (errors)
#   san-ctest  CTest again under ASan+UBSan, fuzz corpora included (scripts/sanitize.sh)
#   fuzz       every fuzz target MYOPS_FUZZ_SECONDS each, default 12 (scripts/fuzz.sh)
# Runs on CPU; CUDA twins skip without a GPU. Exit status is non-zero if anything fails.
# Each stage's wall time is printed as it ends, and at the end (after a failure too) all of
# them with ccache's hits and misses in this run.
#   MYOPS_COLD=1  a cold run on a warm machine: a throwaway ccache directory, virtualenv and
#                 build trees, removed afterwards (Debian's packages and the downloaded
#                 wheels, ~/.cache/myops/wheels, are reused: a new machine's download of
#                 them is the bootstrap's extra cost)
set -euo pipefail
REPO="$(cd "$(dirname "$0")/.." && pwd)"
if [ "${MYOPS_COLD:-0}" = 1 ]; then
  COLD="$(mktemp -d "${TMPDIR:-/tmp}/myops-cold.XXXXXX")"
  export CCACHE_DIR="$COLD/ccache" MYOPS_VENV="$COLD/venv"
  export MYOPS_BUILD_DIR="$COLD/build" MYOPS_SAN_BUILD_DIR="$COLD/build-san"
  echo "[stage] cold run in $COLD" >&2
fi

TIMES=()      # "name seconds busy%", one per finished stage
CURRENT=""    # the stage running now
CCACHE_BEFORE=""
ccache_counts() {  # "hits misses" of ccache so far ("" without ccache)
  command -v ccache >/dev/null || return 0
  ccache --print-stats | awk '$1 ~ /^(direct|preprocessed)_cache_hit$/ {h += $2}
    $1 == "cache_miss" {m += $2} END {print h + 0, m + 0}'
}
report() {
  local rc=$? line hits misses
  trap - EXIT
  for line in "${TIMES[@]}"; do
    printf '[stage] %-10s %5s s  %3s%% busy\n' ${line} >&2
  done
  [ -z "$CURRENT" ] || printf '[stage] %-10s FAILED after %s s\n' "$CURRENT" \
    "$((SECONDS - STAGE_START))" >&2
  printf '[stage] %-10s %5s s\n' total "$SECONDS" >&2
  if [ -n "$CCACHE_BEFORE" ]; then
    read -r hits misses <<<"$(ccache_counts)"
    hits=$((hits - ${CCACHE_BEFORE% *})) misses=$((misses - ${CCACHE_BEFORE#* }))
    echo "[stage] ccache: $hits hits, $misses misses ($(( (hits + misses) ? 100 * hits / (hits + misses) : 0 ))% hits)" >&2
  fi
  [ -z "${COLD:-}" ] || rm -rf "$COLD"
  exit "$rc"
}
trap report EXIT
cpu_ticks() {  # "busy total": the machine's CPU time so far, in clock ticks
  local _cpu user nice system idle iowait rest
  read -r _cpu user nice system idle iowait rest </proc/stat
  echo "$((user + nice + system)) $((user + nice + system + idle + iowait))"
}
stage() {  # stage NAME COMMAND...: runs COMMAND as the stage NAME, timed
  local before after busy
  CURRENT="$1" STAGE_START=$SECONDS
  shift
  echo "[stage] $CURRENT" >&2
  before="$(cpu_ticks)"
  "$@"
  after="$(cpu_ticks)"
  # How busy the cores were: a stage well below 100% has room to run more at once.
  busy=$(( 100 * (${after% *} - ${before% *}) / (${after#* } - ${before#* } + 1) ))
  TIMES+=("$CURRENT $((SECONDS - STAGE_START)) $busy")
  echo "[stage] $CURRENT done in $((SECONDS - STAGE_START)) s, cores ${busy}% busy" >&2
  CURRENT=""
}

stage bootstrap source "$REPO/scripts/env.sh"
CCACHE_BEFORE="$(ccache_counts)"
stage layers python "$MYOPS_REPO/scripts/check_layers.py" "$MYOPS_REPO/server/src"
stage build myops_build
stage ctest ctest --test-dir "$MYOPS_BUILD_DIR" --output-on-failure -j "$(nproc)"
stage pytest "$MYOPS_REPO/scripts/pytest.sh"
san_build() {
  local listed targets
  myops_san_configure
  listed="$(python "$MYOPS_REPO/scripts/ctest_targets.py" "$MYOPS_SAN_BUILD_DIR")"
  mapfile -t targets <<<"$listed"
  cmake --build "$MYOPS_SAN_BUILD_DIR" --target "${targets[@]}" myops_fuzzers
}
stage san-build san_build
stage san-ctest "$MYOPS_REPO/scripts/sanitize.sh" address
stage fuzz "$MYOPS_REPO/scripts/fuzz.sh" "${MYOPS_FUZZ_SECONDS:-12}"
