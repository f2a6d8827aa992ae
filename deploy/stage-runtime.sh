#!/usr/bin/env bash
# Stages what the runtime image needs, in deploy/Dockerfile's builder stage:
#   DEST/bin  myops-server, myops-cli, myops-loadtest
#   DEST/lib  libmyops.so and every shared library the two load (ldd), except glibc and the
#             GCC runtime, which the runtime base image has (same distribution as the builder)
# With TRITON_DEST (the `triton` image): NVIDIA Triton's server from the venv's
# nvidia-pytriton wheel, in its own layout (the binary finds its bundled libraries
# relative to itself), and the myops backend, TRITON_DEST/backends/myops/libtriton_myops.so,
# whose libraries join DEST/lib.
# Files with a symbol table are stripped. Usage: deploy/stage-runtime.sh BUILD_DIR DEST [TRITON_DEST]
set -euo pipefail
build=$1 dest=$2 triton=${3:-}
mkdir -p "$dest/bin" "$dest/lib"
install -m 755 "$build/server/myops-server" "$build/client/cpp/myops-cli" \
  "$build/bench/loadtest/myops-loadtest" "$dest/bin/"
staged=("$dest"/bin/*)
if [ -n "$triton" ]; then
  site=$("$MYOPS_VENV/bin/python" -c 'import importlib.util, os
print(os.path.dirname(importlib.util.find_spec("pytriton").submodule_search_locations[0]))')
  mkdir -p "$triton/pytriton/tritonserver" "$triton/backends/myops"
  cp -a "$site/pytriton/tritonserver/bin" "$triton/pytriton/tritonserver/"
  cp -a "$site/nvidia_pytriton.libs" "$triton/"
  install -m 755 "$build/backends/triton/myops/libtriton_myops.so" "$triton/backends/myops/"
  staged+=("$triton/backends/myops/libtriton_myops.so")
fi

# The build has no RPATH (CMAKE_SKIP_RPATH): point ldd at libmyops, the server's OpenSSL
# shims for civetweb (libssl.so, libcrypto.so: they must win over the builder's OpenSSL
# dev links of the same names; server/CMakeLists.txt says why), the torch wheel and, in a
# CUDA build, the toolkit's libcudart that CMake linked.
torch_lib=$("$MYOPS_VENV/bin/python" -c 'import os, torch; print(os.path.dirname(torch.__file__) + "/lib")')
export LD_LIBRARY_PATH="$build/server/civetweb_tls:$build/python/myops:$torch_lib:${CUDA_HOME:-/usr/local/cuda}/lib64"
deps=$(ldd "${staged[@]}")
# dlopen()ed, so invisible to ldd (CUDA builds): torch's NVRTC stub, and NVRTC's builtins.
if grep -q '^\s*libtorch_cuda\.so ' <<<"$deps"; then
  deps+=$'\n'"$(ldd "$torch_lib/libcaffe2_nvrtc.so")"$'\n'" libcaffe2_nvrtc.so => $torch_lib/libcaffe2_nvrtc.so"
fi
# Everything must resolve, except the GPU driver (the NVIDIA container toolkit mounts it).
missing=$(grep 'not found' <<<"$deps" | grep -Ev '^\s*(libcuda|libnvidia-[a-z-]*)\.so' || true)
if [ -n "$missing" ]; then
  echo "$missing" >&2
  exit 1
fi
base='^(linux-vdso|ld-linux-x86-64|libc|libm|libdl|libpthread|librt|libutil|libresolv|libstdc\+\+|libgcc_s)\.so'
awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }' <<<"$deps" | sort -u | grep -Ev "$base" |
  while read -r name path; do cp -L "$path" "$dest/lib/$name"; done
awk '$1 ~ /^libnvrtc\.so/ { print $3 }' <<<"$deps" | sort -u | while read -r nvrtc; do
  find "$(dirname "$nvrtc")" -maxdepth 1 -name 'libnvrtc-builtins.so.*' -exec cp -L -t "$dest/lib" {} +
done

for f in "${staged[@]}" "$dest"/lib/*; do
  # grep without -q: it reads all of readelf's output (no SIGPIPE failure under pipefail).
  if readelf -S "$f" | grep '\.symtab' >/dev/null; then strip --strip-unneeded "$f"; fi
done
echo "staged $(find "$dest/lib" -type f | wc -l) libraries, $(du -sh "$dest" | cut -f1) in $dest:" >&2
du -sh "$dest"/bin/* "$dest"/lib/* | sort -h | tail -n 8 >&2
