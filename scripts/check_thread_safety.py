#!/usr/bin/env python3
"""Clang's thread-safety analysis over the server's sources, syntax only.

Every member annotated ABSL_GUARDED_BY(mu) must be touched only with `mu` held, and every
function annotated ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) called only with it held
(https://clang.llvm.org/docs/ThreadSafetyAnalysis.html). The build compiles with GCC,
which ignores the annotations; this runs clang -fsyntax-only -Wthread-safety
-Werror=thread-safety on each server/src translation unit of a configured build's
compile_commands.json. scripts/test.sh runs it after the build.

Usage: check_thread_safety.py [BUILD_DIR]   (default: $MYOPS_BUILD_DIR or build/)
Exit status 1 when clang reports anything (its diagnostics are printed).
"""

import concurrent.futures
import json
import os
import pathlib
import shlex
import shutil
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[1]
SRC = REPO / "server" / "src"
# runtime/torch/ holds no locks, and its torch headers are most of the time a pass takes.
SKIP = [SRC / "runtime" / "torch"]
FLAGS = ["-fsyntax-only", "-Wthread-safety", "-Werror=thread-safety",
         "-Wno-unknown-warning-option"]


def clang():
    for name in ("clang++-14", "clang++"):
        if shutil.which(name):
            return name
    sys.exit("check_thread_safety: no clang++ (scripts/bootstrap.sh installs clang)")


def commands(build: pathlib.Path):
    entries = json.loads((build / "compile_commands.json").read_text())
    compiler = clang()
    seen = set()
    for e in entries:
        source = pathlib.Path(e["file"]).resolve()
        if SRC not in source.parents or any(s in source.parents for s in SKIP):
            continue
        if source in seen:
            continue
        seen.add(source)
        args = shlex.split(e["command"])[1:]
        kept = []
        skip_next = False
        for a in args:
            if skip_next:
                skip_next = False
                continue
            if a in ("-o", "-c"):
                skip_next = a == "-o"
                continue
            kept.append(a)
        yield source, e["directory"], [compiler] + kept + FLAGS


def check(item):
    source, directory, argv = item
    result = subprocess.run(argv, cwd=directory, capture_output=True, text=True, check=False)
    return source, result.returncode, result.stderr


def main(argv):
    build = pathlib.Path(argv[1] if len(argv) > 1 else os.environ.get("MYOPS_BUILD_DIR",
                                                                       REPO / "build"))
    if not (build / "compile_commands.json").exists():
        sys.exit(f"check_thread_safety: no {build}/compile_commands.json (configure first)")
    items = list(commands(build))
    failed = 0
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        for source, code, stderr in pool.map(check, items):
            if code != 0:
                failed += 1
                print(f"--- {source.relative_to(REPO)}\n{stderr}")
    if failed:
        print(f"check_thread_safety: {failed} of {len(items)} files fail", file=sys.stderr)
        return 1
    print(f"check_thread_safety: {len(items)} server files hold their locks as annotated")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
