"""The package's type information works for its users: `mypy --strict` passes on a
script that uses every public call (typed_usage.py), and fails on one that misuses
them (so that the check itself is known to check)."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[2]
BUILD = pathlib.Path(os.environ.get("MYOPS_BUILD_DIR", REPO / "build"))


def mypy(path: pathlib.Path) -> subprocess.CompletedProcess[str]:
    pytest.importorskip("mypy")
    pytest.importorskip("myops_client")  # the build tree's (tests/python/conftest.py)
    # The package as built (BUILD/python/myops_client: py.typed, _core.pyi) is checked as
    # its users see it once installed.
    env = {**os.environ, "MYPYPATH": str(BUILD / "python")}
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--python-version",
         f"{sys.version_info.major}.{sys.version_info.minor}", str(path)],
        capture_output=True, text=True, cwd=HERE, env=env)


def test_strict_mypy_passes_on_every_public_call():
    out = mypy(HERE / "typed_usage.py")
    assert out.returncode == 0, out.stdout + out.stderr


def test_strict_mypy_catches_misuse(tmp_path):
    bad = tmp_path / "misuse.py"
    bad.write_text(
        "import myops_client\n"
        "c = myops_client.Client('localhost:1', timeout='soon')\n"
        "n: str = c.health()\n"
        "c.scale_shift([1.0], 2.0)\n")
    out = mypy(bad)
    assert out.returncode == 1, out.stdout + out.stderr
    for line in (2, 3, 4):
        assert f"misuse.py:{line}: error" in out.stdout, out.stdout
