"""The project's mutation check (scripts/mutants.sh runs it): each guard listed in
scripts/mutants.toml is disabled in turn on a scratch copy of the working tree, which is
rebuilt incrementally, and the tests named for it are run; a guard whose tests all still
pass is a survivor: no test would notice the guard gone. Not in CI (minutes per guard);
run it before resolving an issue that adds guards, and list new guards in mutants.toml.

  scripts/mutants.sh [--list] [--scratch DIR] [NAME-SUBSTRING...]

A guard is `file` (relative to the repository), `find` (text that must occur exactly
once in the file, or once after the text `after`), `replace` (what disables it), the
build `targets` its tests need (default: everything), and the tests that must fail:
`ctest` (a regex for ctest -R) and/or `pytest` (paths or node ids).
Exit status: 0 when every guard run was caught, 1 when one survived, 2 on a bad list.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import pathlib
import shutil
import subprocess
import sys
import tomllib

REPO = pathlib.Path(__file__).resolve().parents[1]
LIST = REPO / "scripts" / "mutants.toml"


@dataclasses.dataclass
class Guard:
    name: str
    file: str
    find: str
    replace: str
    after: str = ""
    targets: list[str] = dataclasses.field(default_factory=list)  # empty: everything
    ctest: str = ""
    pytest: list[str] = dataclasses.field(default_factory=list)


class ListError(Exception):
    """A guard that cannot be applied as listed (its text is gone or ambiguous)."""


def load(path: pathlib.Path = LIST) -> list[Guard]:
    with path.open("rb") as f:
        entries = tomllib.load(f).get("guard", [])
    guards = []
    for entry in entries:
        try:
            guard = Guard(**entry)
        except TypeError as e:
            raise ListError(f"{entry.get('name', '?')}: {e}") from None
        if not guard.ctest and not guard.pytest:
            raise ListError(f"{guard.name}: names no test that must fail")
        guards.append(guard)
    return guards


def mutate(text: str, guard: Guard) -> str:
    """`text` with the guard disabled; ListError unless its text is found exactly once
    (after `after`, when given)."""
    start = 0
    if guard.after:
        if text.count(guard.after) != 1:
            raise ListError(f"{guard.name}: 'after' text found {text.count(guard.after)} times "
                            f"in {guard.file}")
        start = text.index(guard.after)
    head, tail = text[:start], text[start:]
    found = tail.count(guard.find) if not guard.after else (1 if guard.find in tail else 0)
    if found != 1:
        raise ListError(f"{guard.name}: 'find' text found {found} times in {guard.file}"
                        + (" after its anchor" if guard.after else ""))
    return head + tail.replace(guard.find, guard.replace, 1)


def check_list(guards: list[Guard], root: pathlib.Path = REPO) -> None:
    """Every guard still applies to the tree at `root` (ListError otherwise)."""
    for guard in guards:
        mutate((root / guard.file).read_text(), guard)


def scratch_copy(scratch: pathlib.Path) -> None:
    """The working tree's files (tracked and untracked, not ignored) mirrored into
    `scratch`, whose own build directory is kept between runs."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO,
                           check=True, capture_output=True).stdout.decode().split("\0")
    scratch.mkdir(parents=True, exist_ok=True)
    for name in filter(None, files):
        source, target = REPO / name, scratch / name
        if not source.is_file():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists() or target.read_bytes() != source.read_bytes():
            shutil.copy2(source, target)


def run(command: list[str], cwd: pathlib.Path, log: pathlib.Path) -> bool:
    with log.open("a") as out:
        out.write(f"$ {' '.join(command)}\n")
        out.flush()
        return subprocess.run(command, cwd=cwd, stdout=out, stderr=subprocess.STDOUT).returncode == 0


def build(scratch: pathlib.Path, log: pathlib.Path, targets: list[str] | None = None) -> bool:
    target_args = " ".join(["--target", *targets]) if targets else ""
    # One CTest test per GoogleTest test: the guards name them (tests/CMakeLists.txt).
    return run(["bash", "-c", "source scripts/env.sh >/dev/null && "
                f"myops_configure -DMYOPS_CTEST_PER_TEST=ON && myops_build {target_args}"],
               scratch, log)


def tests_pass(guard: Guard, scratch: pathlib.Path, log: pathlib.Path) -> bool:
    """Whether every test named for `guard` passes (the guard then survived)."""
    ok = True
    if guard.ctest:
        ok &= run(["ctest", "--test-dir", "build", "-R", guard.ctest, "--no-tests=error",
                   "-j", str(os.cpu_count() or 2)], scratch, log)
    if guard.pytest:
        env = "source scripts/env.sh >/dev/null && MYOPS_REQUIRE_PYTHON_CLIENT=1 python -m pytest -q -x "
        ok &= run(["bash", "-c", env + " ".join(guard.pytest)], scratch, log)
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="run only guards whose name contains one of these")
    parser.add_argument("--list", action="store_true", help="check the list applies, run nothing")
    parser.add_argument("--scratch", type=pathlib.Path,
                        default=pathlib.Path(os.environ.get("TMPDIR", "/tmp")) / "myops-mutants")
    args = parser.parse_args()
    try:
        guards = load()
        check_list(guards)
    except ListError as e:
        print(f"mutants: {e}", file=sys.stderr)
        return 2
    chosen = [g for g in guards if not args.names or any(n in g.name for n in args.names)]
    if args.list:
        for g in chosen:
            print(f"{g.name}: {g.file}")
        return 0
    scratch = args.scratch.resolve()
    scratch_copy(scratch)
    log = scratch / "mutants.log"
    log.write_text("")
    print(f"mutants: {len(chosen)} guards on {scratch} (log: {log})", flush=True)
    if not build(scratch, log):
        print("mutants: the unmutated tree does not build; see the log", file=sys.stderr)
        return 2
    survivors = []
    for guard in chosen:
        path = scratch / guard.file
        original = path.read_text()
        try:
            path.write_text(mutate(original, guard))
            if not build(scratch, log, guard.targets):
                verdict = "caught (does not build)"
            elif tests_pass(guard, scratch, log):
                verdict = "SURVIVED"
                survivors.append(guard.name)
            else:
                verdict = "caught"
        finally:
            path.write_text(original)
            build(scratch, log, guard.targets)  # the next guard's tests see no mutant
        print(f"  {guard.name}: {verdict}", flush=True)
    print(f"mutants: {len(chosen) - len(survivors)} of {len(chosen)} caught"
          + (f"; survivors: {', '.join(survivors)}" if survivors else ""))
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
