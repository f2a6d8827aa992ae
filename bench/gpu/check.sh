#!/usr/bin/env bash
# GPU check, on a machine with an NVIDIA GPU and a CUDA build of PyTorch but no Debian
# packages or registries. From the bundle made by bench/gpu/bundle.sh (carried next to
# the repository; nothing is built then): checks the bundle, runs the C++ tests (CUDA
# twins included), the Python operator tests on CPU and CUDA, the kernel's GB/s against a
# device-to-device copy, and the server's round trip on cuda and on cpu at 1 KiB, 16 MiB
# and 256 MiB. Without a GPU the CUDA tests skip and the GPU measurements are left out.
#
#   bench/gpu/check.sh [--dry-run | --ops-only]
#     --dry-run   no GPU needed, nothing run: checks that the bundle is complete, built for
#                 this torch with CUDA kernels (machine code and PTX for its arch list),
#                 that every library resolves (ldd) to the bundle, the torch wheel or the
#                 system's glibc/GCC runtime, and prints the commands a real run runs
#     --ops-only  no bundle: builds libmyops here with cmake (-DMYOPS_WITH_CUDA=ON when a
#                 GPU is present) and runs only the operator tests and bandwidth
#   PYTHON               interpreter with torch (default: python3)
#   MYOPS_GPU_BUNDLE     the bundle (default: <repo>/build-gpu-bundle)
#   MYOPS_GPU_BUILD_DIR  build tree of --ops-only (default: <repo>/build-gpu)
#   MYOPS_GPU_RESULTS    where JSON results go (default: <repo>/bench/results/gpu)
#   CUOBJDUMP            cuobjdump (default: on PATH, in /usr/local/cuda/bin, or triton's)
# Exit status: non-zero when the bundle is missing or wrong, or a build or test fails
# (each command runs; the failed ones are listed at the end).
set -euo pipefail
REPO="$(cd "$(dirname "$0")/../.." && pwd)"
MODE=run
case "${1:-}" in
  "") ;;
  --dry-run) MODE=dry ;;
  --ops-only) MODE=ops ;;
  *) echo "usage: $0 [--dry-run | --ops-only]" >&2; exit 2 ;;
esac
PY="${PYTHON:-python3}"
BUNDLE="${MYOPS_GPU_BUNDLE:-$REPO/build-gpu-bundle}"
OUT="${MYOPS_GPU_RESULTS:-$REPO/bench/results/gpu}"
step() { printf '\n=== %s\n' "$*"; }
fail() { echo "check.sh: $*" >&2; exit 1; }
q() { printf '%q' "$1"; }

step "environment"
# One interpreter start (importing torch takes seconds): facts to stderr, variables to eval.
eval "$("$PY" - <<'PY'
import os, shlex, sys, torch
print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, GPU available: {torch.cuda.is_available()}",
      file=sys.stderr)
for i in range(torch.cuda.device_count()):
    print(f"  cuda:{i} {torch.cuda.get_device_name(i)}", file=sys.stderr)
print(f"HAS_GPU={int(torch.cuda.is_available())}")
print(f"TORCH_VERSION={shlex.quote(torch.__version__)}")
print(f"SITE={shlex.quote(os.path.dirname(os.path.dirname(torch.__file__)))}")
PY
)"
[ -n "${SITE:-}" ] || fail "$PY cannot import torch (set PYTHON)"
if [ "$MODE" = run ] && command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv || true
fi
# The binaries' RUNPATH names build-machine paths: libmyops comes from the bundle, torch
# from the wheel, and libcudart (which the binaries load directly) from the wheel's
# nvidia/cu13/lib, where the cu130 wheels keep the CUDA runtime.
LIB_PATH="$BUNDLE/lib:$BUNDLE/python/myops:$SITE/torch/lib:$SITE/nvidia/cu13/lib"

# Every check of the bundle; fails with a message saying what to do.
check_bundle() {
  [ -d "$BUNDLE" ] || fail "no bundle at $BUNDLE. Make it with bench/gpu/bundle.sh and name" \
    "it in the device tool's carry (bench/README.md, \"GPU\"), or run with --ops-only"
  [ -f "$BUNDLE/MANIFEST" ] || fail "$BUNDLE has no MANIFEST; remake it with bench/gpu/bundle.sh"
  local f missing=()
  for f in bin/myops-server bin/myops-cli bin/ops_test bin/server_exec_test bin/server_test \
           bin/server_e2e_test python/myops/libmyops.so python/myops/__init__.py \
           TORCH_VERSION TORCH_CUDA_ARCH_LIST; do
    grep -qxF "$f" "$BUNDLE/MANIFEST" || missing+=("$f (not in MANIFEST)")
  done
  while read -r f; do [ -f "$BUNDLE/$f" ] || missing+=("$f"); done <"$BUNDLE/MANIFEST"
  [ ${#missing[@]} -eq 0 ] || fail "the bundle is incomplete, missing: ${missing[*]}"
  echo "bundle: $(wc -l <"$BUNDLE/MANIFEST") files, $(du -sh "$BUNDLE" | cut -f1)"

  [ "$(cat "$BUNDLE/TORCH_VERSION")" = "$TORCH_VERSION" ] ||
    fail "the bundle was built for torch $(cat "$BUNDLE/TORCH_VERSION"), $PY has" \
      "$TORCH_VERSION; rebuild it against $TORCH_VERSION"

  # ldd, not readelf: binutils may be missing where glibc's ldd is not. grep without -q:
  # it reads all of ldd's output (no SIGPIPE failure under pipefail).
  LD_LIBRARY_PATH="$LIB_PATH" ldd "$BUNDLE/python/myops/libmyops.so" |
    grep 'libc10_cuda\.so' >/dev/null ||
    fail "the bundle's libmyops has no CUDA kernels (a CPU-only build)"
  local cuobjdump="${CUOBJDUMP:-}" c
  for c in "$(command -v cuobjdump || true)" /usr/local/cuda/bin/cuobjdump \
           "$SITE/triton/backends/nvidia/bin/cuobjdump"; do  # torch's triton ships one
    [ -n "$cuobjdump" ] || { [ -x "$c" ] && cuobjdump="$c"; } || true
  done
  [ -n "$cuobjdump" ] || fail "cuobjdump not found (set CUOBJDUMP)"
  local elf ptx arch sm archs
  elf="$("$cuobjdump" --list-elf "$BUNDLE/python/myops/libmyops.so")"
  ptx="$("$cuobjdump" --list-ptx "$BUNDLE/python/myops/libmyops.so")"
  archs="$(cat "$BUNDLE/TORCH_CUDA_ARCH_LIST")"
  grep -q '+PTX' <<<"$archs" ||
    fail "CUDA archs \"$archs\" have no +PTX: GPUs newer than the list fail with \"no kernel image\""
  for arch in ${archs//;/ }; do
    sm="${arch%+PTX}"; sm="${sm//./}"
    grep -q "\.sm_$sm\.cubin" <<<"$elf" || fail "libmyops has no sm_$sm machine code ($archs)"
    if [[ "$arch" == *+PTX ]]; then
      grep -q "\.sm_$sm\.ptx" <<<"$ptx" || fail "libmyops has no compute_$sm PTX ($archs)"
    fi
  done
  echo "libmyops: CUDA archs $archs; machine code: $(grep -o 'sm_[0-9a-z]*\.cubin' <<<"$elf" |
    sort -u | tr '\n' ' ')PTX: $(grep -o 'sm_[0-9a-z]*\.ptx' <<<"$ptx" | sort -u | tr '\n' ' ')"

  # Library lookup as the real run sets it up. Allowed: the bundle, the torch wheel, and
  # the system's glibc and GCC runtime; glibc's libraries must not be in the bundle.
  local deps bad
  deps="$(for f in "$BUNDLE"/bin/* "$BUNDLE/python/myops/libmyops.so"; do
    echo "$f:"; LD_LIBRARY_PATH="$LIB_PATH" ldd "$f"; done)"
  bad="$(grep 'not found' <<<"$deps" | grep -Ev '^\s*(libcuda|libnvidia-[a-z-]*)\.so' || true)"
  [ -z "$bad" ] || fail "libraries not found:"$'\n'"$bad"
  local system='^(linux-vdso|ld-linux[-a-z0-9_]*|libc|libm|libmvec|libdl|libpthread|librt|libutil|libresolv|libanl|libnsl|libnss_[a-z0-9_]+|libBrokenLocale|libthread_db|libc_malloc_debug|libmemusage|libpcprofile|libstdc\+\+|libgcc_s)\.so'
  bad="$(find "$BUNDLE/lib" -maxdepth 1 -printf '%f\n' | grep -E "$system" | tr '\n' ' ' || true)"
  [ -z "$bad" ] || fail "glibc/GCC runtime libraries in the bundle (they shadow the system's): $bad"
  bad="$(awk -v b="$BUNDLE/" -v s="$SITE/" '$2 == "=>" && $3 ~ /^\// &&
      index($3, b) != 1 && index($3, s) != 1 { print $1, "=>", $3 }' <<<"$deps" |
    sort -u | grep -Ev "$system" || true)"
  [ -z "$bad" ] || fail "libraries found outside the bundle and the torch wheel (missing from" \
    "the bundle, or from $SITE/nvidia/cu13/lib):"$'\n'"$bad"
  echo "ldd: every library of $(find "$BUNDLE/bin" -type f | wc -l) binaries and libmyops resolves to" \
    "the bundle, the torch wheel or the system's glibc/GCC runtime"
}

# The commands of the run, one per line (printed by --dry-run, run otherwise).
COMMANDS=()
plan() { COMMANDS+=("$*"); }
BUILD="$BUNDLE"
if [ "$MODE" = ops ]; then
  BUILD="${MYOPS_GPU_BUILD_DIR:-$REPO/build-gpu}"
  command -v cmake >/dev/null || fail "--ops-only needs cmake"
  cuda=AUTO; [ "$HAS_GPU" = 1 ] && cuda=ON  # never a silent CPU-only build next to a GPU
  gen=""; command -v ninja >/dev/null && gen="-G Ninja"
  prefix="$("$PY" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')"
  log="$(q "$BUILD/configure.log")"
  plan "mkdir -p $(q "$BUILD") && cmake -S $(q "$REPO") -B $(q "$BUILD") $gen" \
    "-DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=$(q "$prefix") -DMYOPS_BUILD_SERVER=OFF" \
    "-DMYOPS_BUILD_TESTS=OFF -DMYOPS_WITH_CUDA=$cuda" \
    "-DPython_EXECUTABLE=$(q "$(command -v "$PY")") >$log 2>&1 || { cat $log; false; }"
  plan "cmake --build $(q "$BUILD") -j $(nproc) --target myops"
else
  check_bundle
  L="LD_LIBRARY_PATH=$(q "$LIB_PATH")"
  plan "$L $(q "$BUNDLE/bin/ops_test") --gtest_brief=1"
  plan "$L $(q "$BUNDLE/bin/server_exec_test") --gtest_brief=1"
  plan "$L $(q "$BUNDLE/bin/server_test") --gtest_brief=1"
  plan "$L MYOPS_SERVER_BINARY=$(q "$BUNDLE/bin/myops-server")" \
    "$(q "$BUNDLE/bin/server_e2e_test") --gtest_brief=1"
fi
plan "MYOPS_BUILD_DIR=$(q "$BUILD") $(q "$PY") -m pytest -q -p no:cacheprovider -rs" \
  "$(q "$REPO/tests/python/ops")"
if [ "$HAS_GPU" = 1 ] || [ "$MODE" = dry ]; then
  plan "PYTHONPATH=$(q "$BUILD/python") $(q "$PY") $(q "$REPO/bench/ops_bench.py") --device cuda" \
    "--size-mib 256 --json $(q "$OUT/ops_bench_cuda.json")"
fi
if [ "$MODE" != ops ]; then
  plan "$L $(q "$REPO/bench/gpu/serve.sh") $(q "$BUNDLE") $([ "$HAS_GPU" = 1 ] || [ "$MODE" = dry ] || echo --cpu-only)"
fi

if [ "$MODE" = dry ]; then
  step "dry run: the commands a run on a GPU machine runs, in order"
  printf '%s\n' "${COMMANDS[@]}"
  exit 0
fi
mkdir -p "$OUT"
[ "$HAS_GPU" = 1 ] || step "no GPU: the CUDA tests skip; no GPU measurements"
# Every command runs even when one fails: a GPU lease is too short to rerun for each.
failed=()
for c in "${COMMANDS[@]}"; do
  step "$c"
  if ! (eval "$c"); then failed+=("$c"); fi
done
if [ ${#failed[@]} -gt 0 ]; then
  step "FAILED (${#failed[@]} of ${#COMMANDS[@]})"
  printf '%s\n' "${failed[@]}"
  exit 1
fi
step "all ${#COMMANDS[@]} commands passed"
