#!/usr/bin/env bash
# Installs Triton's own load generator, perf_analyzer 2.51.0 (of the Triton release that
# bench/vs_triton.sh runs), once, into ~/.cache/myops/perf_analyzer-2.51.0, and prints the
# path of the binary: the third client of bench/vs_triton.sh (--client perf_analyzer,
# through bench/perf_analyzer_load.py). It ships in the tritonclient 2.51.0 wheel
# (data/bin/perf_analyzer), linked against libb64 (Debian's libb64-0d) and CUDA 12's
# runtime (the PyPI wheel nvidia-cuda-runtime-cu12: loaded, never used without a GPU);
# both go into its lib/, found through the RUNPATH-free binary's LD_LIBRARY_PATH, which
# bench/perf_analyzer_load.py sets.
#   bench/peers/perf_analyzer.sh
set -euo pipefail
source "$(dirname "$0")/../../scripts/env.sh" >&2
dir="$HOME/.cache/myops/perf_analyzer-2.51.0"
if [ ! -x "$dir/bin/perf_analyzer" ]; then
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  "$MYOPS_VENV/bin/pip" download -q --no-deps -d "$tmp" tritonclient==2.51.0 \
    nvidia-cuda-runtime-cu12==12.6.77 >&2
  (cd "$tmp" && apt-get download -q libb64-0d) >&2 2>/dev/null ||
    (apt-get update -q && cd "$tmp" && apt-get download -q libb64-0d) >&2
  mkdir -p "$tmp/out/bin" "$tmp/out/lib"
  unzip -q -j "$tmp"/tritonclient-2.51.0-*.whl \
    'tritonclient-2.51.0.data/data/bin/perf_analyzer' -d "$tmp/out/bin"
  unzip -q -j "$tmp"/nvidia_cuda_runtime_cu12-*.whl 'nvidia/cuda_runtime/lib/libcudart.so.12' \
    -d "$tmp/out/lib"
  dpkg-deb -x "$tmp"/libb64-0d_*.deb "$tmp/b64"
  cp -L "$tmp"/b64/usr/lib/x86_64-linux-gnu/libb64.so.0d "$tmp/out/lib/"
  chmod +x "$tmp/out/bin/perf_analyzer"
  LD_LIBRARY_PATH="$tmp/out/lib" "$tmp/out/bin/perf_analyzer" --version >&2
  mkdir -p "$(dirname "$dir")"
  rm -rf "$dir"
  mv "$tmp/out" "$dir"
fi
echo "$dir/bin/perf_analyzer"
