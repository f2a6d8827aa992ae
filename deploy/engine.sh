# What deploy/test.sh and deploy/triton/test.sh share (sourced, from the repository root):
# the container engine, building an image of deploy/Dockerfile, free ports.
#   engine        MYOPS_DOCKER, else docker if its daemon answers, else podman
#   podman        yes when the engine is podman
#   build_image IMAGE [BUILD ARGS...]   unless MYOPS_SKIP_BUILD is set; logs its time, and
#                 its size (bytes, also in $size)
#   free_port     a free loopback port
engine=${MYOPS_DOCKER:-}
if [ -z "$engine" ]; then
  engine=docker
  docker info >/dev/null 2>&1 || ! command -v podman >/dev/null || engine=podman
fi
podman=no; case "$("$engine" --version)" in *podman*) podman=yes ;; esac

build_image() {
  local image=$1
  shift
  if [ -z "${MYOPS_SKIP_BUILD:-}" ]; then
    local args=(-f deploy/Dockerfile --build-arg VARIANT=cpu -t "$image" "$@")
    [ "$podman" = yes ] && args+=(--format docker)  # OCI images would drop the HEALTHCHECK
    # pip behind a TLS-intercepting proxy: hand the CA bundle over as a build secret.
    local cert=${MYOPS_PIP_CERT:-${PIP_CERT:-$(sed -n 's/^cert *= *//p' /etc/pip.conf 2>/dev/null | head -n 1)}}
    [ -n "$cert" ] && [ -f "$cert" ] && args+=(--secret "id=pipcert,src=$cert")
    local start=$SECONDS
    "$engine" build "${args[@]}" . >&2
    log "built $image in $((SECONDS - start)) s"
  fi
  size=$("$engine" image inspect -f '{{.Size}}' "$image")  # global: the callers report it
  log "image size: $((size / 1000000)) MB"
}

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
