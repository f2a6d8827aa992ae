"""Fixtures of the Open Inference Protocol suite: a real myops-server that loads the
test operator library (tests/server/test_ops) with --load-library and serves the
HTTP/REST front end too, a tritonclient.grpc client of its
inference.GRPCInferenceService and a tritonclient.http client of its REST endpoint."""

from __future__ import annotations


import pytest

from myops_testing import BUILD, ServerProcess

TEST_OPS = BUILD / "tests" / "server" / "libmyops_test_ops.so"


@pytest.fixture(scope="session")
def kserve_server():
    if not TEST_OPS.exists():
        pytest.fail(f"{TEST_OPS} not found: build the tests first")
    server = ServerProcess("--load-library", str(TEST_OPS), "--ops", "myops::*,myops_test::*",
                           "--http-address", "127.0.0.1:0")
    yield server
    server.close()


@pytest.fixture(scope="session")
def client(kserve_server):
    import tritonclient.grpc as grpcclient
    c = grpcclient.InferenceServerClient(kserve_server.address)
    yield c
    c.close()


@pytest.fixture(scope="session")
def http_client(kserve_server):
    import tritonclient.http as httpclient
    c = httpclient.InferenceServerClient(kserve_server.http_address, concurrency=4)
    yield c
    c.close()
