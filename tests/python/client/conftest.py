"""Fixtures of the Python client tests: real myops-server processes and clients
(see client_helpers.py).

The test modules import the built extension. Without it, for a developer who did
not build it, they are not collected and test_built.py's one test skips saying
why; where it must be there (scripts/test.sh sets MYOPS_REQUIRE_PYTHON_CLIENT=1)
its absence is an error instead, so a broken build cannot pass as a run with the
client tests skipped."""

from __future__ import annotations

import os
import socket

import pytest

try:
    import myops_client
except ImportError as error:
    if os.environ.get("MYOPS_REQUIRE_PYTHON_CLIENT") == "1":
        raise ImportError(
            f"MYOPS_REQUIRE_PYTHON_CLIENT=1 but myops_client cannot be imported "
            f"({error}); build it (myops_build) or unset the variable") from error
    collect_ignore_glob = ["test_client_*.py"]
else:
    if os.environ.get("MYOPS_TEST_INSTALLED_CLIENT") == "1" and (
            "site-packages" not in myops_client.__file__):
        raise ImportError(f"MYOPS_TEST_INSTALLED_CLIENT=1 but myops_client comes from "
                          f"{myops_client.__file__}, not from an installed package")

from myops_testing import quick_server  # noqa: E402

from client_helpers import SMALL_MAX_ELEMENTS, SMALL_MAX_MESSAGE_BYTES  # noqa: E402


@pytest.fixture(scope="session")
def server():
    """A server with the default limits."""
    s = quick_server()
    yield s
    s.stop()


@pytest.fixture(scope="session")
def small_server():
    """A server with tiny limits (SMALL_MAX_ELEMENTS, SMALL_MAX_MESSAGE_BYTES)."""
    s = quick_server("--max-elements", str(SMALL_MAX_ELEMENTS),
               "--max-message-bytes", str(SMALL_MAX_MESSAGE_BYTES))
    yield s
    s.stop()


@pytest.fixture
def client(server):
    """A client of `server`; closed after the test."""
    with myops_client.Client(server.address, timeout=30.0) as c:
        yield c


@pytest.fixture
def closed_port() -> str:
    """An address nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"127.0.0.1:{port}"


@pytest.fixture
def silent_server():
    """An address that accepts TCP connections and never answers."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(16)
        yield "127.0.0.1:%d" % s.getsockname()[1]
