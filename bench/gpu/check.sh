#!/usr/bin/env bash
# GPU check: on a machine with an NVIDIA GPU and a CUDA build of PyTorch (no package
# registries needed), builds libmyops against that torch (when cmake is there), runs the
# CUDA tests and prints the kernel's GB/s against a device-to-device copy. With the
# bundle made by bench/gpu/bundle.sh (a CUDA build of the server, its tests and the gRPC
# runtime libraries) it also runs the server's CUDA twins and serves requests on the GPU.
# Without a GPU it runs the CPU parts and reports the CUDA parts as skipped.
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

BUNDLE="$REPO/build-gpu-bundle"
if ! command -v cmake >/dev/null; then
  [ -d "$BUNDLE" ] || { echo "no cmake and no $BUNDLE: nothing to test with"; exit 1; }
  step "no cmake here: using the prebuilt libmyops from $BUNDLE"
  BUILD="$BUNDLE"
else
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

if [ -d "$BUNDLE" ]; then
  step "server on this machine (bundle from bench/gpu/bundle.sh)"
  TORCH_VERSION="$("$PY" -c 'import torch; print(torch.__version__)')"
  if [ "$(cat "$BUNDLE/TORCH_VERSION")" != "$TORCH_VERSION" ]; then
    echo "bundle was built for torch $(cat "$BUNDLE/TORCH_VERSION"), this machine has $TORCH_VERSION: skipped"
    exit 0
  fi
  TORCH_LIB="$("$PY" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')"
  export LD_LIBRARY_PATH="$BUNDLE/lib:$TORCH_LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  "$BUNDLE/bin/ops_test" --gtest_brief=1
  "$BUNDLE/bin/server_test" --gtest_brief=1
  MYOPS_SERVER_BINARY="$BUNDLE/bin/myops-server" "$BUNDLE/bin/server_e2e_test" --gtest_brief=1
  LOG="$(mktemp)"
  "$BUNDLE/bin/myops-server" --address 127.0.0.1:0 --devices auto --drain-delay 0 >"$LOG" 2>&1 &
  PID=$!
  for _ in $(seq 300); do grep -q "listening on" "$LOG" && break; sleep 0.1; done
  cat "$LOG"
  ADDR="$(grep -oE 'listening on [0-9.]+:[0-9]+' "$LOG" | awk '{print $3}')"
  CLI="$BUNDLE/bin/myops-cli"
  "$CLI" info --target "$ADDR"
  DEV=cpu; [ "$HAS_GPU" = 1 ] && DEV=cuda
  for shape in 256 1024,1024 4096,4096; do
    "$CLI" scale-shift --target "$ADDR" --device "$DEV" --shape "$shape" --repeat 20
  done
  kill -TERM "$PID"
  wait "$PID" && echo "server exited 0 after SIGTERM"
fi
