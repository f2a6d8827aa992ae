#!/usr/bin/env python3
"""The build outputs that a configured tree's CTest tests run, as Ninja targets.

scripts/sanitize.sh builds only these in the sanitized tree (no benchmarks, tools or
Triton backend that no CTest test runs). CTest's own files, written at configure time,
name them: a gtest_discover_tests suite by its `<target>[1]_include.cmake`, an add_test
command (and its ENVIRONMENT) by the absolute paths of the programs and libraries it is
given. Dependencies the tests' targets declare (add_dependencies) come along through Ninja.

Usage: ctest_targets.py BUILD_DIR   (prints one target per line; exit 1 if none)
"""

import pathlib
import re
import subprocess
import sys

DISCOVERED = re.compile(r'include\("[^"]*/([^/"]+)\[1\]_include\.cmake"\)')


def ninja_outputs(build: pathlib.Path) -> set:
    listing = subprocess.run(["ninja", "-C", str(build), "-t", "targets", "all"],
                             capture_output=True, text=True, check=True).stdout
    return {line.rsplit(":", 1)[0] for line in listing.splitlines() if ":" in line}


def test_targets(build: pathlib.Path) -> list:
    outputs = ninja_outputs(build)
    paths = re.compile(re.escape(str(build.resolve())) + r'/([^"\s;]+)')
    found = []
    for testfile in sorted(build.rglob("CTestTestfile.cmake")):
        text = testfile.read_text()
        found += DISCOVERED.findall(text)
        found += [p for p in paths.findall(text) if p in outputs]
    return list(dict.fromkeys(found))  # Unique, in the order CTest lists them.


def main(argv):
    if len(argv) != 2:
        sys.exit(__doc__.strip().splitlines()[-1])
    targets = test_targets(pathlib.Path(argv[1]))
    if not targets:
        sys.exit(f"ctest_targets: {argv[1]} has no CTest tests (configure it first)")
    print("\n".join(targets))


if __name__ == "__main__":
    main(sys.argv)
