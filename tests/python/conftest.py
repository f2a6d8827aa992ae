"""Shared pytest setup: makes the in-tree `myops` package importable from a build tree.

MYOPS_BUILD_DIR (default: <repo>/build) is where CMake put python/myops/libmyops.so.
"""

import os
import pathlib
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("MYOPS_BUILD_DIR", REPO / "build"))
sys.path.insert(0, str(BUILD / "python"))
