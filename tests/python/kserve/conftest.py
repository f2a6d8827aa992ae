"""Fixtures of the Open Inference Protocol suite: a real myops-server that loads the
test operator library (tests/server/test_ops) with --load-library, and a
tritonclient.grpc client of its inference.GRPCInferenceService."""

from __future__ import annotations

import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "faults"))

from fault_helpers import BUILD, ServerProcess  # noqa: E402

TEST_OPS = BUILD / "tests" / "server" / "libmyops_test_ops.so"


@pytest.fixture(scope="session")
def kserve_server():
    if not TEST_OPS.exists():
        pytest.fail(f"{TEST_OPS} not found: build the tests first")
    server = ServerProcess("--load-library", str(TEST_OPS), "--ops", "myops::*,myops_test::*")
    yield server
    server.close()


@pytest.fixture(scope="session")
def client(kserve_server):
    import tritonclient.grpc as grpcclient
    c = grpcclient.InferenceServerClient(kserve_server.address)
    yield c
    c.close()
