"""Fixtures of the replica tests: several myops-server processes behind one client
target (see replica_helpers.py). Like the client tests, they need the built Python
client; where it must be there (MYOPS_REQUIRE_PYTHON_CLIENT=1) its absence is an error,
otherwise the tests are not collected."""

from __future__ import annotations

import os

import pytest

try:
    import myops_client  # noqa: F401
except ImportError as error:
    if os.environ.get("MYOPS_REQUIRE_PYTHON_CLIENT") == "1":
        raise ImportError(
            f"MYOPS_REQUIRE_PYTHON_CLIENT=1 but myops_client cannot be imported "
            f"({error}); build it (myops_build) or unset the variable") from error
    collect_ignore_glob = ["test_*.py"]

from replica_helpers import Replica  # noqa: E402


@pytest.fixture
def replicas():
    """A factory of replicas, all killed after the test: replicas(3, *flags) starts
    r0, r1, r2 on 127.0.0.1 with free ports."""
    started: list[Replica] = []

    def start(count: int, *flags: str, names=None) -> list[Replica]:
        names = names or [f"r{len(started) + i}" for i in range(count)]
        new = [Replica(name, *flags) for name in names]
        started.extend(new)
        return new

    yield start
    for r in started:
        r.close()
