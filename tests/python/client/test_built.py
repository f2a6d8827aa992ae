"""Whether the myops_client extension is built: without it the other modules of
this folder are not collected (see conftest.py), and this test says so."""

from __future__ import annotations

import importlib.util
import pathlib

import pytest


def test_myops_client_extension_is_built():
    if importlib.util.find_spec("myops_client") is None:
        pytest.skip("myops_client is not built (MYOPS_BUILD_PYTHON_CLIENT): the "
                    "Python client tests were not collected; set "
                    "MYOPS_REQUIRE_PYTHON_CLIENT=1 to make this an error")
    from myops_client import _core
    assert pathlib.Path(_core.__file__).is_file()
    assert _core.Client.__module__ == "myops_client._core"
