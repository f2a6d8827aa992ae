"""Whether the myops_client extension is built: without it the other modules of
this folder are not collected (see conftest.py), and this test says so."""

from __future__ import annotations

import importlib.util
import pathlib
import shutil
import subprocess
import sys

import pytest


def test_myops_client_extension_is_built():
    if importlib.util.find_spec("myops_client") is None:
        pytest.skip("myops_client is not built (MYOPS_BUILD_PYTHON_CLIENT): the "
                    "Python client tests were not collected; set "
                    "MYOPS_REQUIRE_PYTHON_CLIENT=1 to make this an error")
    from myops_client import _core
    assert pathlib.Path(_core.__file__).is_file()
    assert _core.Client.__module__ == "myops_client._core"


def test_the_extension_uses_only_the_stable_abi_of_3_11():
    """One binary for every CPython from 3.11 on: the module is named as an abi3 one and
    abi3audit finds no symbol outside the limited API of 3.11 in it."""
    if importlib.util.find_spec("myops_client") is None:
        pytest.skip("myops_client is not built")
    from myops_client import _core
    path = pathlib.Path(_core.__file__)
    assert path.name == "_core.abi3.so", path
    audit = shutil.which("abi3audit", path=str(pathlib.Path(sys.executable).parent))
    if audit is None:
        pytest.skip("abi3audit is not installed (scripts/bootstrap.sh installs it)")
    out = subprocess.run([audit, "--strict", "--assume-minimum-abi3", "3.11", "--report",
                          str(path)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert '"non_abi3_symbols": []' in out.stdout, out.stdout
