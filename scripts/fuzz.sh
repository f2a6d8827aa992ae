#!/usr/bin/env bash
# Builds (idempotently) and runs the libFuzzer targets of tests/fuzz:
#   scripts/fuzz.sh SECONDS [TARGET...]     (default: every target; TARGET e.g. npy)
# Each target runs SECONDS on a scratch copy of its seed corpus (tests/fuzz/corpus/<target>,
# so the repository's corpus is never modified), with its dictionary from tests/fuzz/dict.
# Crashes, leaks, timeouts and sanitizer reports are saved under
# $MYOPS_SAN_BUILD_DIR/artifacts/ and make the script fail; one summary line per target
# (executions, edge coverage, corpus size) is printed at the end.
# The targets live in the sanitized tree (MYOPS_SAN_BUILD_DIR, default <repo>/build-san;
# scripts/env.sh myops_san_configure), which scripts/sanitize.sh address also builds.
#   MYOPS_FUZZ_CORPUS_OUT keep each run's grown corpus in this folder (default: discarded)
#   MYOPS_FUZZ_JOBS       targets fuzzed at once, one core each (default: nproc)
set -euo pipefail
SECONDS_EACH="${1:?usage: scripts/fuzz.sh SECONDS [TARGET...]}"
shift
source "$(dirname "$0")/env.sh"
BUILD="$MYOPS_SAN_BUILD_DIR"
FUZZ_SRC="$MYOPS_REPO/tests/fuzz"
TARGETS=("$@")
((${#TARGETS[@]})) || TARGETS=(request request_differential response health npy call_request call_response rest_request infer_request
  shm_endpoint call_chunks rest_body request_head)

myops_san_configure
cmake --build "$BUILD" --target myops_fuzzers

ARTIFACTS="$BUILD/artifacts"
mkdir -p "$ARTIFACTS"
SCRATCH="$(mktemp -d)"
trap 'rm -rf "$SCRATCH"' EXIT
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
# fuzz_one TARGET: runs one target on its scratch corpus; its exit status in $SCRATCH/$t.rc.
fuzz_one() {
  local t=$1 dict="$FUZZ_SRC/dict/protobuf.dict" rc=0
  [ "$t" = npy ] && dict="$FUZZ_SRC/dict/npy.dict"
  [ "$t" = rest_request ] && dict="$FUZZ_SRC/dict/json.dict"
  [ "$t" = shm_endpoint ] && dict="$FUZZ_SRC/dict/json.dict"
  [ "$t" = request_head ] && dict="$FUZZ_SRC/dict/http.dict"
  mkdir -p "$SCRATCH/$t" "$SCRATCH/$t.cwd"
  cp "$FUZZ_SRC/corpus/$t/"* "$SCRATCH/$t/"
  echo "[fuzz] $t: ${SECONDS_EACH}s" >&2
  (cd "$SCRATCH/$t.cwd" && "$BUILD/tests/fuzz/${t}_fuzzer" -max_total_time="$SECONDS_EACH" \
     -timeout=10 -rss_limit_mb=2048 -max_len=4096 -dict="$dict" -print_final_stats=1 \
     -artifact_prefix="$ARTIFACTS/$t-" "$SCRATCH/$t" >"$SCRATCH/$t.log" 2>&1) || rc=$?
  echo "$rc" >"$SCRATCH/$t.rc"
}
# One target per core at a time (MYOPS_FUZZ_JOBS, default nproc): each fuzzer is one
# process on one core, so each still gets its SECONDS of a core to itself.
jobs_max="${MYOPS_FUZZ_JOBS:-$(nproc)}"
for t in "${TARGETS[@]}"; do
  while (($(jobs -rp | wc -l) >= jobs_max)); do wait -n || true; done
  fuzz_one "$t" &
done
wait
failed=()
summary=()
for t in "${TARGETS[@]}"; do
  log="$SCRATCH/$t.log"
  rc=$(cat "$SCRATCH/$t.rc" 2>/dev/null || echo 1)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  edges=$(sed -n 's/.*Loaded [0-9]* modules *(\([0-9]*\) inline 8-bit counters).*/\1/p' "$log" | head -1)
  last=$(grep -E '^#[0-9]+' "$log" | tail -1 | grep -oE 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+/[0-9]+[a-zA-Z]*' || true)
  summary+=("$t: ${execs:-?} execs in ${SECONDS_EACH}s, $last (of ${edges:-?} instrumented edges)")
  if ((rc != 0)); then
    failed+=("$t")
    grep -E 'ERROR|violated|SUMMARY|artifact' "$log" >&2 || tail -n 30 "$log" >&2
    cp "$log" "$ARTIFACTS/$t.log"
  fi
  if [ -n "${MYOPS_FUZZ_CORPUS_OUT:-}" ]; then
    mkdir -p "$MYOPS_FUZZ_CORPUS_OUT/$t" && cp "$SCRATCH/$t/"* "$MYOPS_FUZZ_CORPUS_OUT/$t/"
  fi
done
printf '[fuzz] %s\n' "${summary[@]}" >&2
if ((${#failed[@]})); then
  echo "[fuzz] FAILED: ${failed[*]} (inputs and logs in $ARTIFACTS)" >&2
  exit 1
fi
