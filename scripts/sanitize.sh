#!/usr/bin/env bash
# Sanitizer runs of the C++ test suites (README "Testing"):
#   scripts/sanitize.sh address   ASan + UBSan in the sanitized tree (build-san, clang-14,
#                                 scripts/env.sh myops_san_configure, which the fuzz targets
#                                 share): builds what CTest runs (scripts/ctest_targets.py)
#                                 and runs every GoogleTest suite, the end-to-end tests of
#                                 the real binaries and the fuzz targets over their corpora,
#                                 but those labelled "large" (tensors beyond 2 GiB)
#   scripts/sanitize.sh thread    TSan (build-tsan, gcc): the C++ client's concurrency tests
#                                 (tests/sanitizers/tsan_tests.regex: streams, async calls,
#                                 one client on many threads, against the echo server);
#                                 torch-free. What TSan can and cannot see here:
#                                 tests/sanitizers/tsan.supp
# Both use the system allocator and no CUDA (cmake/MyopsSanitizers.cmake). libtorch, gRPC,
# protobuf and abseil come from binary packages and are not instrumented; what that costs
# is written in tests/sanitizers/*.supp, one justified entry at a time.
#   MYOPS_SANITIZE_CTEST_ARGS  extra ctest arguments, e.g. "-R server_test"
set -euo pipefail
KIND="${1:-address}"
EXCLUDE_LABEL=""
source "$(dirname "$0")/env.sh"
SUPP="$MYOPS_REPO/tests/sanitizers"
case "$KIND" in
  address)
    export MYOPS_BUILD_DIR="$MYOPS_SAN_BUILD_DIR"
    myops_san_configure
    # Assigned first: a failure of the listing stops the script here, with its message.
    listed="$(python "$MYOPS_REPO/scripts/ctest_targets.py" "$MYOPS_BUILD_DIR")"
    mapfile -t targets <<<"$listed"
    cmake --build "$MYOPS_BUILD_DIR" --target "${targets[@]}"
    # protect_shadow_gap=0: where a GPU is present, the CUDA driver (initialized through
    # libtorch) maps memory into ASan's shadow gap; without a GPU the suite passes either
    # way. LSan on, UBSan halting on the first report.
    export ASAN_OPTIONS="protect_shadow_gap=0:detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1"
    export LSAN_OPTIONS="suppressions=$SUPP/lsan.supp:print_suppressions=0"
    export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"  # No UBSan suppressions needed.
    REGEX="."
    EXCLUDE_LABEL="large"
    ;;
  thread)
    export MYOPS_BUILD_DIR="$MYOPS_REPO/build-tsan" MYOPS_BUILD_TYPE=RelWithDebInfo
    export MYOPS_CMAKE_ARGS="-DMYOPS_SANITIZE=thread -DMYOPS_MALLOC=system \
-DMYOPS_WITH_CUDA=OFF -DMYOPS_BUILD_PYTHON_CLIENT=OFF"
    myops_build --target client_test
    export TSAN_OPTIONS="suppressions=$SUPP/tsan.supp:halt_on_error=1:second_deadlock_stack=1"
    REGEX="$(cat "$SUPP/tsan_tests.regex")"
    ;;
  *)
    echo "usage: scripts/sanitize.sh [address|thread]" >&2
    exit 2
    ;;
esac
# shellcheck disable=SC2086
ctest --test-dir "$MYOPS_BUILD_DIR" --output-on-failure -j "$(nproc)" -R "$REGEX" \
  ${EXCLUDE_LABEL:+-LE "$EXCLUDE_LABEL"} ${MYOPS_SANITIZE_CTEST_ARGS:-}
