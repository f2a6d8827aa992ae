"""The example exported program (scripts/export_program.py) as the program tests use it:
the script loaded as a module (its model, inputs and export()), with the build's `myops`
Python package (libmyops, myops.export) on the path."""

from __future__ import annotations

import importlib.util
import sys
import types

from myops_testing.paths import BUILD, REPO


def example_program() -> types.ModuleType:
    if str(BUILD / "python") not in sys.path:
        sys.path.insert(0, str(BUILD / "python"))
    spec = importlib.util.spec_from_file_location("export_program",
                                                  REPO / "scripts" / "export_program.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_PACKAGE: list[str] = []  # exported once per test process


def example_package() -> str:
    """The example program exported and packaged for the CPU (batch 2..15 once compiled),
    once per test process (~20 s), in a temporary directory kept for the process's life."""
    if not _PACKAGE:
        import atexit
        import shutil
        import tempfile
        work = tempfile.mkdtemp(prefix="myops-programs-")
        atexit.register(shutil.rmtree, work, True)
        _PACKAGE.append(example_program().export(f"{work}/detector.pt2"))
    return _PACKAGE[0]
