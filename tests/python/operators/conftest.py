"""Fixtures of the operator-table suite: a real myops-server that loads the test
operator library (tests/server/test_ops, built as libmyops_test_ops.so) and
torchvision's operators with --load-library, and grpcio stubs of myops.v1."""

from __future__ import annotations

import pathlib

import pytest

from myops_testing import BUILD, ServerProcess
from myops_testing.stubs import load_stubs

TEST_OPS = BUILD / "tests" / "server" / "libmyops_test_ops.so"


def torchvision_library() -> pathlib.Path:
    import torchvision
    return pathlib.Path(torchvision.__file__).parent / "_C.so"


@pytest.fixture(scope="session")
def stubs():
    return load_stubs()


@pytest.fixture(scope="session")
def ops_server():
    if not TEST_OPS.exists():
        pytest.fail(f"{TEST_OPS} not found: build the tests first")
    server = ServerProcess("--load-library", str(TEST_OPS),
                           "--load-library", str(torchvision_library()),
                           "--ops", "myops::*,myops_test::*,torchvision::nms,"
                                    "torchvision::roi_align")
    yield server
    server.close()


@pytest.fixture(scope="session")
def stub(ops_server, stubs):
    import grpc
    pb, pb_grpc = stubs
    channel = grpc.insecure_channel(ops_server.address)
    yield pb_grpc.MyopsStub(channel)
    channel.close()
