#!/usr/bin/env bash
# GPU check: on a machine with an NVIDIA GPU and a CUDA build of PyTorch (no package
# registries needed), builds libmyops against that torch, runs the CUDA tests and prints
# the kernel's GB/s against a device-to-device copy. Without a GPU it builds, runs the
# CPU tests and reports the CUDA parts as skipped.
#
#   PYTHON                 interpreter with torch (default: python3)
#   MYOPS_GPU_BUILD_DIR    build tree (default: <repo>/build-gpu)
#   TORCH_CUDA_ARCH_LIST   default 9.0 (H100/H200)
# Writes bench/results/gpu/*.json; exit status non-zero if a build or test fails.
set -euo pipefail
REPO="$(cd "$(dirname "$0")/../.." && pwd)"
PY="${PYTHON:-python3}"
BUILD="${MYOPS_GPU_BUILD_DIR:-$REPO/build-gpu}"
OUT="$REPO/bench/results/gpu"
export TORCH_CUDA_ARCH_LIST="${TORCH_CUDA_ARCH_LIST:-9.0}"
mkdir -p "$OUT"
step() { printf '\n=== %s\n' "$*"; }

step "environment"
"$PY" - <<'PY'
import torch
print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, GPU available: {torch.cuda.is_available()}")
for i in range(torch.cuda.device_count()):
    print(f"  cuda:{i} {torch.cuda.get_device_name(i)}")
PY
HAS_GPU="$("$PY" -c 'import torch; print(int(torch.cuda.is_available()))')"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv || true

step "build libmyops against this torch"
PREFIX="$("$PY" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')"
TESTS=OFF; [ -f /usr/include/gtest/gtest.h ] && TESTS=ON
GEN=(); command -v ninja >/dev/null && GEN=(-G Ninja)
mkdir -p "$BUILD"
cmake -S "$REPO" -B "$BUILD" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PREFIX" \
  -DMYOPS_BUILD_SERVER=OFF -DMYOPS_BUILD_TESTS="$TESTS" -DTORCH_CUDA_ARCH_LIST="$TORCH_CUDA_ARCH_LIST" \
  -DPython_EXECUTABLE="$(command -v "$PY")" >"$BUILD/configure.log" 2>&1 || { cat "$BUILD/configure.log"; exit 1; }
cmake --build "$BUILD" -j "$(nproc)"

if [ "$TESTS" = ON ]; then
  step "GoogleTest (CUDA twins run when a GPU is present)"
  (cd "$BUILD" && ctest --output-on-failure)
fi

step "pytest: opcheck, gradcheck, torch.compile on CPU and CUDA"
MYOPS_BUILD_DIR="$BUILD" "$PY" -m pytest -q -p no:cacheprovider "$REPO/tests/python/ops" -rs

if [ "$HAS_GPU" = 1 ]; then
  step "kernel bandwidth on CUDA (vs device-to-device copy)"
  PYTHONPATH="$BUILD/python" "$PY" "$REPO/bench/ops_bench.py" --device cuda --size-mib 256 \
    --json "$OUT/ops_bench_cuda.json"
else
  step "no GPU: CUDA tests and bandwidth skipped"
fi
