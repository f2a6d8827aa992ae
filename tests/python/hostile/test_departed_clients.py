"""Work of a client that left is not started: a REST inference queued behind a busy
worker whose client hangs up before it runs is dropped (counted as cancelled), as gRPC
drops the queued work of a cancelled call. Uses myops_test::gated_copy, which holds the
one CPU worker until the test opens its gate (--inline-max-bytes 0: every call goes to
the workers, none runs on the HTTP thread that received it)."""

from __future__ import annotations

import http.client
import json
import socket
import threading

import pytest

from myops_testing import BUILD, ServerProcess, poll

TEST_OPS = BUILD / "tests" / "server" / "libmyops_test_ops.so"


def infer_body(gate) -> bytes:
    return json.dumps({"inputs": [{"name": "x", "shape": [4], "datatype": "FP32",
                                   "data": [1, 2, 3, 4]}],
                       "parameters": {"dir": str(gate)}}).encode()


def post(address: str, body: bytes) -> bytes:
    host, port = address.rsplit(":", 1)
    return (f"POST /v2/models/myops_test::gated_copy/infer HTTP/1.1\r\nHost: {host}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
            ).encode() + body


@pytest.fixture
def server():
    s = ServerProcess("--load-library", str(TEST_OPS), "--ops", "myops::*,myops_test::*",
                      "--http-address", "127.0.0.1:0", "--cpu-workers", "1",
                      "--inline-max-bytes", "0")
    yield s
    s.close()


def test_queued_work_of_a_rest_client_that_hung_up_is_not_run(server, tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    # The first call holds the one worker at its gate.
    busy = {}

    def call_first() -> None:
        host, port = server.http_address.rsplit(":", 1)
        connection = http.client.HTTPConnection(host, int(port), timeout=60)
        connection.request("POST", "/v2/models/myops_test::gated_copy/infer",
                           infer_body(first), {"Content-Type": "application/json"})
        busy["status"] = connection.getresponse().status
        connection.close()

    thread = threading.Thread(target=call_first)
    thread.start()
    try:
        assert poll(lambda: (first / "started").exists(), 60)
        # The second waits for the worker; its client hangs up meanwhile.
        host, port = server.http_address.rsplit(":", 1)
        departed = socket.create_connection((host, int(port)))
        departed.sendall(post(server.http_address, infer_body(second)))
        assert poll(lambda: server.metrics().get("myops_inflight_requests", 0) >= 2, 30)
        departed.close()
    finally:
        (first / "go").write_text("1")
        thread.join(60)
    assert busy.get("status") == 200
    # The departed client's call is answered as cancelled and never reaches the op.
    assert poll(lambda: server.metrics().get("myops_inflight_requests", 1) == 0, 30)
    (second / "go").write_text("1")  # had it started, let it finish
    assert not (second / "started").exists()
    cancelled = [v for k, v in server.metrics().items()
                 if k.startswith("myops_requests_total") and 'code="CANCELLED"' in k
                 and "HttpModelInfer" in k]
    assert sum(cancelled) == 1, server.metrics()
