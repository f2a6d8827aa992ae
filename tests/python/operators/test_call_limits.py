"""Generic calls under the server's limits and against hostile bytes: a crafted request
head is refused before protobuf parses it, results larger than a message are refused
with RESOURCE_EXHAUSTED, start-up fails clearly for a library or pattern that cannot be
served."""

from __future__ import annotations

import subprocess

import grpc
import numpy as np
import pytest

from conftest import TEST_OPS
from myops_testing.hostile_wire import field
from myops_testing import SERVER, ServerProcess, poll
from values import request

CALL = "/myops.v1.Myops/Call"


def ld(number: int, payload: bytes) -> bytes:
    return field(number, 2, payload)


def raw_call(address: str, payload: bytes):
    with grpc.insecure_channel(address) as channel:
        method = channel.unary_unary(CALL)
        with pytest.raises(grpc.RpcError) as raised:
            method(payload, timeout=60)
    return raised.value.code(), raised.value.details()


@pytest.mark.parametrize("name, payload", [
    # 200,000 packed ints: 8x larger once parsed than the bytes they came in.
    ("packed int list", ld(1, b"myops_test::filled") +
     ld(2, ld(2, ld(6, ld(1, b"\x01" * 200_000))))),
    # 50,000 empty tensors in a list: a parsed object each.
    ("tiny tensors", ld(1, b"myops_test::stack_all") +
     ld(2, ld(2, ld(8, ld(1, b"") * 50_000)))),
])
def test_a_crafted_head_is_refused_before_parsing(ops_server, name, payload):
    code, details = raw_call(ops_server.address, payload)
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert "other than tensor data take more than 65536 bytes" in details


def test_malformed_bytes_are_invalid_argument(ops_server):
    code, details = raw_call(ops_server.address, b"\x0a\xff\xff\xff\xff\x0f")
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "not a valid myops.v1.CallRequest" in details


def test_results_beyond_the_message_limit_are_resource_exhausted(stubs):
    pb, pb_grpc = stubs
    server = ServerProcess("--load-library", str(TEST_OPS), "--ops", "myops_test::*",
                           "--max-message-bytes", str(1 << 20))
    try:
        with grpc.insecure_channel(server.address) as channel:
            stub = pb_grpc.MyopsStub(channel)
            # 1024 x 256 int64 = 2 MiB of result from a few bytes of request.
            with pytest.raises(grpc.RpcError) as raised:
                stub.Call(request(pb, "myops_test::filled", [1024, 256]), timeout=60)
            assert raised.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert "more than the largest message this server sends" in raised.value.details()
            stub.Call(request(pb, "myops_test::filled", [2, 2]), timeout=60)  # still serving
        # The server releases a call's budget in OnDone, after the client may already
        # have its response: wait for it, as the other idle checks do.
        assert poll(server.gauges_idle), server.metrics()
    finally:
        server.close()


@pytest.mark.parametrize("flags, expected", [
    (["--load-library", "/nonexistent/libops.so"],
     "cannot load operator library /nonexistent/libops.so"),
    (["--ops", "myops::*,nothere::*"], "no registered operator matches --ops pattern 'nothere::*'"),
    (["--ops", "myops"], "bad operator pattern 'myops'"),
    (["--load-library", str(TEST_OPS), "--ops", "myops_test::missing"],
     "no registered operator matches --ops pattern 'myops_test::missing'"),
])
def test_start_up_fails_clearly(flags, expected):
    run = subprocess.run([str(SERVER), "--address", "127.0.0.1:0", *flags],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 1
    assert expected in run.stderr
