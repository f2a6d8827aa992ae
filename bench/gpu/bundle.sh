#!/usr/bin/env bash
# Makes the bundle that bench/gpu/check.sh runs on a GPU machine that has PyTorch but no
# Debian packages (no gRPC, no GoogleTest): a CUDA build of the server, the CLI, every
# C++ test binary (the CUDA twins run only from here), libmyops, and the gRPC/Protobuf/
# Abseil/tcmalloc libraries they load. Not bundled: torch and the CUDA libraries (the GPU
# machine's torch wheel, which must be the same version, has them in torch/lib and
# nvidia/cu13/lib), glibc and the GCC runtime (the machine's own; check.sh's ldd says so
# if they are too old).
#
#   bench/gpu/bundle.sh [--from BUILD_DIR] [--out DIR]
#     default: builds the bundle's targets in $MYOPS_BUILD_DIR (<repo>/build, the usual
#              tree, so only what changed is compiled) with -DMYOPS_WITH_CUDA=ON
#     --from   copies from an existing CUDA build tree, building nothing (CI)
#     --out    default <repo>/build-gpu-bundle (git-ignored: carry it to the GPU machine)
#   PYTHON                the interpreter with torch (default: the project venv's)
#   TORCH_CUDA_ARCH_LIST  passed to CMake when set (default: CMake's, 9.0+PTX)
#
# Layout: bin/ (binaries), lib/ (libraries), python/myops/ (import myops), TORCH_VERSION,
# TORCH_CUDA_ARCH_LIST, MANIFEST (every file; check.sh requires each).
set -euo pipefail
REPO="$(cd "$(dirname "$0")/../.." && pwd)"
FROM="" OUT="$REPO/build-gpu-bundle"
while [ $# -gt 0 ]; do
  case "$1" in
    --from) FROM="$(cd "$2" && pwd)"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    *) echo "usage: $0 [--from BUILD_DIR] [--out DIR]" >&2; exit 2 ;;
  esac
done
# The bundle's contents, as paths in a build tree (check.sh reads the same names from MANIFEST).
BINS=(server/myops-server client/cpp/myops-cli tests/ops/ops_test tests/server/server_exec_test
      tests/server/server_test tests/server/server_e2e_test)
TARGETS=(myops myops-server myops-cli ops_test server_exec_test server_test server_e2e_test)

if [ -z "$FROM" ]; then
  source "$REPO/scripts/env.sh"
  MYOPS_CMAKE_ARGS="-DMYOPS_WITH_CUDA=ON -DMYOPS_BUILD_TESTS=ON ${MYOPS_CMAKE_ARGS:-}"
  [ -n "${TORCH_CUDA_ARCH_LIST:-}" ] &&
    MYOPS_CMAKE_ARGS+=" -DTORCH_CUDA_ARCH_LIST=$TORCH_CUDA_ARCH_LIST"
  export MYOPS_CMAKE_ARGS
  myops_build --target "${TARGETS[@]}"
  FROM="$MYOPS_BUILD_DIR"
  PY="${PYTHON:-$MYOPS_VENV/bin/python}"
else
  PY="${PYTHON:-python3}"
fi
B="$FROM"
for f in "${BINS[@]}" python/myops/libmyops.so python/myops/__init__.py; do
  [ -f "$B/$f" ] || { echo "bundle: $B/$f is missing; build the targets ${TARGETS[*]}" >&2; exit 1; }
done
# grep without -q: it reads all of readelf's output (no SIGPIPE failure under pipefail).
if ! readelf -d "$B/python/myops/libmyops.so" | grep 'NEEDED.*libc10_cuda' >/dev/null; then
  echo "bundle: $B is a CPU-only build (libmyops has no CUDA kernels); configure it with" \
       "-DMYOPS_WITH_CUDA=ON" >&2
  exit 1
fi

rm -rf "$OUT"
mkdir -p "$OUT/bin" "$OUT/lib" "$OUT/python/myops"
OUT="$(cd "$OUT" && pwd)"
for f in "${BINS[@]}"; do cp "$B/$f" "$OUT/bin/"; done
cp "$B/python/myops/libmyops.so" "$B/python/myops/__init__.py" "$OUT/python/myops/"

# Library lookup as check.sh sets it up on the GPU machine, with this machine's torch.
SITE="$("$PY" -c 'import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))')"
export LD_LIBRARY_PATH="$OUT/python/myops:$SITE/torch/lib:$SITE/nvidia/cu13/lib"
deps="$(for f in "$OUT"/bin/* "$OUT/python/myops/libmyops.so"; do ldd "$f"; done)"
missing="$(grep 'not found' <<<"$deps" | grep -Ev '^\s*(libcuda|libnvidia-[a-z-]*)\.so' || true)"
[ -z "$missing" ] || { echo "bundle: unresolved libraries:"$'\n'"$missing" >&2; exit 1; }
# glibc (every library of the package) and the GCC runtime stay the GPU machine's own.
SYSTEM='^(linux-vdso|ld-linux[-a-z0-9_]*|libc|libm|libmvec|libdl|libpthread|librt|libutil|libresolv|libanl|libnsl|libnss_[a-z0-9_]+|libBrokenLocale|libthread_db|libc_malloc_debug|libmemusage|libpcprofile|libstdc\+\+|libgcc_s)\.so'
# The rest, unless in the bundle already, in the torch wheel, or a CUDA toolkit library
# (the wheel's nvidia/ has those).
awk -v out="$OUT/" -v site="$SITE/" '$2 == "=>" && $3 ~ /^\// && index($3, out) != 1 &&
    index($3, site) != 1 && index($3, "/usr/local/cuda") != 1 { print $1, $3 }' <<<"$deps" |
  sort -u | grep -Ev "$SYSTEM" | while read -r name path; do cp -L "$path" "$OUT/lib/$name"; done
for f in "$OUT"/bin/* "$OUT"/lib/* "$OUT/python/myops/libmyops.so"; do
  # grep without -q: it reads all of readelf's output (no SIGPIPE failure under pipefail).
  if readelf -S "$f" | grep '\.symtab' >/dev/null; then strip --strip-unneeded "$f"; fi
done

"$PY" -c 'import torch; print(torch.__version__)' >"$OUT/TORCH_VERSION"
sed -n 's/^TORCH_CUDA_ARCH_LIST:STRING=//p' "$B/CMakeCache.txt" >"$OUT/TORCH_CUDA_ARCH_LIST"
(cd "$OUT" && find . -type f ! -name MANIFEST | sed 's|^\./||' | sort >MANIFEST)
echo "bundle: $(wc -l <"$OUT/MANIFEST") files, $(du -sh "$OUT" | cut -f1) in $OUT (torch" \
     "$(cat "$OUT/TORCH_VERSION"), CUDA archs $(cat "$OUT/TORCH_CUDA_ARCH_LIST"))"
