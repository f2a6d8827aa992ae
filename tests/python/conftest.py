"""Shared pytest setup: makes the in-tree `myops` package importable from a build tree.

MYOPS_BUILD_DIR (default: <repo>/build) is where CMake put python/myops/libmyops.so
(and python/myops_client, the Python client). With MYOPS_TEST_INSTALLED_CLIENT=1 the
build tree stays off sys.path, so the client tests import the myops_client installed
from a wheel or sdist (scripts/wheel_container_test.sh, scripts/sdist_test.sh); the
servers they start still come from MYOPS_BUILD_DIR.
"""

import os
import pathlib
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("MYOPS_BUILD_DIR", REPO / "build"))
if os.environ.get("MYOPS_TEST_INSTALLED_CLIENT") != "1":
    sys.path.insert(0, str(BUILD / "python"))

# The suites that run alone, never beside another test (scripts/pytest.sh): they measure a
# server's memory, file descriptors and answer times under attack or faults, which a
# neighbour's load would distort. Single tests that time a call are marked where they are.
SERIAL_SUITES = ("hostile", "faults")


def pytest_collection_modifyitems(items):
    for item in items:
        parts = item.path.resolve().relative_to(REPO).parts
        if parts[:2] == ("tests", "python") and parts[2] in SERIAL_SUITES:
            item.add_marker("serial")
