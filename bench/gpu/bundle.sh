#!/usr/bin/env bash
# Prepares what bench/gpu/check.sh needs on a GPU machine that has PyTorch but no Debian
# packages: a CUDA build of the server, its tests and the CLI, plus the gRPC/Protobuf/
# Abseil runtime libraries they load (torch and CUDA libraries are NOT bundled: the GPU
# machine's own torch, which must be the same version, provides them).
#
#   bench/gpu/bundle.sh            -> build-gpu-bundle/{bin,lib,python,VERSION}
# Carry build-gpu-bundle to the GPU machine next to the repository; check.sh finds it.
set -euo pipefail
source "$(dirname "$0")/../../scripts/env.sh"
export MYOPS_BUILD_DIR="$MYOPS_REPO/build-gpu-release"
export MYOPS_CMAKE_ARGS="-DMYOPS_WITH_CUDA=ON -DTORCH_CUDA_ARCH_LIST=9.0 ${MYOPS_CMAKE_ARGS:-}"
myops_build
OUT="$MYOPS_REPO/build-gpu-bundle"
rm -rf "$OUT"
mkdir -p "$OUT/bin" "$OUT/lib" "$OUT/python/myops"
B="$MYOPS_BUILD_DIR"
BINS=("$B/server/myops-server" "$B/tests/server/server_test" "$B/tests/server/server_e2e_test"
      "$B/tests/ops/ops_test" "$B/client/cpp/myops-cli")
cp "${BINS[@]}" "$OUT/bin/"
cp "$B/python/myops/libmyops.so" "$B/python/myops/__init__.py" "$OUT/python/myops/"
# Runtime libraries from the system (not torch's, not CUDA's, not glibc's).
for bin in "${BINS[@]}"; do ldd "$bin"; done | awk '/=> \//{print $3}' | sort -u |
  grep -vE '/(libc|libm|libdl|librt|libpthread|libgcc_s|libstdc\+\+|ld-linux[^/]*)\.so' |
  grep -vE 'site-packages|/cuda' | while read -r lib; do cp -L "$lib" "$OUT/lib/"; done
python -c 'import torch; print(torch.__version__)' >"$OUT/TORCH_VERSION"
# Binaries look for torch where the build found it; check.sh points them at the GPU
# machine's torch with LD_LIBRARY_PATH instead.
du -sh "$OUT"
ls "$OUT/lib"
