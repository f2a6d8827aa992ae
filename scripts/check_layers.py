#!/usr/bin/env python3
"""The server's layering, checked on #include lines (server/README.md, "Layers").

Each folder of server/src is a layer and a CMake library; a file may include only the
layers below its own, and only the layers that may see torch, protobuf/gRPC, civetweb or
prometheus include those. The build cannot enforce all of this (every library shares the
include root server/src), so this script does, in CI (scripts/test.sh).

Usage: check_layers.py [ROOT]   (ROOT: the server's source folder, default server/src)
Prints one line per forbidden include (file:line: what and why) and exits 1 if any.
"""

import pathlib
import re
import sys

# Layer of a path (relative to ROOT): the longest prefix that names one. "" is the
# composition root (main.cc, config.*, server.*), which may include everything.
LAYERS = [
    "util",
    "runtime",
    "runtime/torch",  # the runtime's torch side: private to the runtime
    "shm",
    "pipeline",
    "http",
    "frontends",  # what every front end shares (auth): not a front end itself
    "frontends/grpc",  # gRPC plumbing shared by the gRPC front ends
    "frontends/myops_v1",
    "frontends/oip",  # the Open Inference Protocol: one binding, two transports
    "frontends/oip/grpc",
    "frontends/oip/rest",
]

_BASE = ["util"]
_BELOW_FRONTENDS = _BASE + ["runtime", "shm", "pipeline", "frontends"]
# The layers each layer may include (its own is always allowed).
MAY_INCLUDE = {
    "util": [],
    "runtime": _BASE + ["runtime/torch"],
    "runtime/torch": _BASE + ["runtime"],
    "shm": _BASE,
    "pipeline": _BASE + ["runtime", "shm"],
    "http": _BASE + ["pipeline"],
    "frontends": _BASE,
    "frontends/grpc": _BELOW_FRONTENDS,
    "frontends/myops_v1": _BELOW_FRONTENDS + ["frontends/grpc"],
    "frontends/oip": _BELOW_FRONTENDS + ["frontends/grpc", "http"],
    "frontends/oip/grpc": _BELOW_FRONTENDS + ["frontends/grpc", "frontends/oip"],
    "frontends/oip/rest": _BELOW_FRONTENDS + ["http", "frontends/oip"],
}

# Third-party headers by family: (pattern on the included name, where it may appear).
# A rule's places are layer names; "*.cc" after one means its sources only, not headers.
EXTERNAL = [
    (
        "torch",
        re.compile(r"^(torch|ATen|c10|caffe2)/|^myops/ops\.h$"),
        ["runtime/*.cc", "runtime/torch", ""],
        "torch's headers ship their own protobuf; only the runtime's sources and its "
        "private runtime/torch see them",
    ),
    (
        "protobuf/gRPC",
        re.compile(r"\.pb\.h$|^grpcpp?/|^google/protobuf/|^myops/(v1|wire)/"),
        ["frontends", "frontends/grpc", "frontends/myops_v1", "frontends/oip",
         "frontends/oip/grpc", "frontends/oip/rest", ""],
        "the runtime, pipeline and shared memory are protocol-neutral",
    ),
    (
        "civetweb",
        re.compile(r"^civetweb\.h$"),
        ["http", "frontends/oip/rest", ""],
        "HTTP belongs to the listener and the REST binding",
    ),
    (
        "JSON",
        re.compile(r"^nlohmann/"),
        ["http", "frontends/oip/rest", "runtime/*.cc", ""],
        "JSON bodies belong to the REST binding; the runtime's sources read programs' "
        "package metadata (runtime/program.cc)",
    ),
    (
        "prometheus",
        re.compile(r"^prometheus/"),
        ["pipeline/*.cc", "http", ""],
        "metrics are recorded through pipeline/metrics.h",
    ),
]

_INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def layer_of(rel: str) -> str:
    parent = str(pathlib.PurePosixPath(rel).parent)
    best = ""
    for layer in LAYERS:
        if parent == layer or parent.startswith(layer + "/"):
            if len(layer) > len(best):
                best = layer
    return best


def _allowed_here(places, layer: str, is_source: bool) -> bool:
    for place in places:
        name, _, only = place.partition("/*.")
        if name == layer and (not only or is_source):
            return True
    return False


def check(root: pathlib.Path):
    problems = []
    files = sorted(p for p in root.rglob("*") if p.suffix in (".h", ".cc", ".c"))
    for path in files:
        rel = path.relative_to(root).as_posix()
        layer = layer_of(rel)
        is_source = path.suffix in (".cc", ".c")
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            m = _INCLUDE.match(line)
            if not m:
                continue
            name = m.group(2)
            where = f"{rel}:{n}"
            target = layer_of(name) if (root / name).exists() else None
            if target is not None and layer != "":
                if target != layer and target not in MAY_INCLUDE[layer]:
                    problems.append(
                        f"{where}: {layer or 'root'} may not include {name} ({target or 'root'})"
                    )
                continue
            for family, pattern, places, why in EXTERNAL:
                if pattern.search(name) and not _allowed_here(places, layer, is_source):
                    problems.append(f"{where}: {layer or 'root'} may not include {family} "
                                    f"header {name}: {why}")
    return problems


def main(argv):
    root = pathlib.Path(argv[1] if len(argv) > 1 else "server/src")
    if not root.is_dir():
        print(f"check_layers: {root} is not a folder", file=sys.stderr)
        return 2
    problems = check(root)
    for p in problems:
        print(p)
    if problems:
        print(f"check_layers: {len(problems)} forbidden include(s) in {root}", file=sys.stderr)
        return 1
    print(f"check_layers: {root} keeps its layers")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
