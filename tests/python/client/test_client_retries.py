"""What the Python client puts on the wire, observed by a scripted grpcio server:
the attempts of each call (UNAVAILABLE retried `retries` times, other codes not
at all) and the bearer token on every attempt."""

from __future__ import annotations

import threading
from concurrent import futures

import numpy as np
import pytest

import myops_client

grpc = pytest.importorskip("grpc", reason="grpcio is needed for the scripted server")

# myops.v1.ScaleShiftResponse{output: {dtype: FLOAT32, shape: [2], data: 8 zero
# bytes}, timing: {device: "scripted"}}, encoded by hand.
_TENSOR = b"\x08\x01" + b"\x12\x01\x02" + b"\x1a\x08" + bytes(8)
_TIMING = b"\x32\x08scripted"
RESPONSE = b"\x0a" + bytes([len(_TENSOR)]) + _TENSOR + b"\x12" + bytes([len(_TIMING)]) + _TIMING


class ScriptedServer:
    """Fails the first `failures` calls with `code`, then answers ScaleShift with
    RESPONSE and ServerInfo with an empty message; records each call's
    authorization metadata (None when absent)."""

    def __init__(self, failures: int, code=None) -> None:
        self.failures = failures
        self.code = code or grpc.StatusCode.UNAVAILABLE
        self.calls: list[tuple[str, str | None]] = []
        self._lock = threading.Lock()
        handlers = {name: grpc.unary_unary_rpc_method_handler(self._handler(name, answer))
                    for name, answer in (("ScaleShift", RESPONSE), ("ServerInfo", b""))}
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        self._server.add_generic_rpc_handlers(
            [grpc.method_handlers_generic_handler("myops.v1.Myops", handlers)])
        port = self._server.add_insecure_port("127.0.0.1:0")
        self._server.start()
        self.address = f"127.0.0.1:{port}"

    def _handler(self, name: str, answer: bytes):
        def handle(request: bytes, context) -> bytes:
            metadata = dict(context.invocation_metadata())
            with self._lock:
                fail = len(self.calls) < self.failures
                self.calls.append((name, metadata.get("authorization")))
            if fail:
                context.abort(self.code, "scripted failure")
            return answer
        return handle

    def stop(self) -> None:
        self._server.stop(grace=None)


@pytest.fixture
def scripted():
    servers = []

    def start(failures: int, code=None) -> ScriptedServer:
        servers.append(ScriptedServer(failures, code))
        return servers[-1]
    yield start
    for s in servers:
        s.stop()


def _client(server: ScriptedServer, retries: int, **kwargs) -> myops_client.Client:
    return myops_client.Client(server.address, timeout=20, retries=retries,
                               retry_backoff=0.001, max_retry_backoff=0.005, **kwargs)


X = np.array([1.0, 2.0], np.float32)


def test_succeeds_after_transient_unavailable(scripted):
    server = scripted(2)
    with _client(server, retries=2) as client:
        y, timing = client.scale_shift(X, 2.0, 1.0, return_timing=True)
    np.testing.assert_array_equal(y, np.zeros(2, np.float32))
    assert timing.device == "scripted"
    assert [name for name, _ in server.calls] == ["ScaleShift"] * 3


@pytest.mark.parametrize("retries", [0, 1, 3])
def test_gives_up_after_retries(scripted, retries):
    server = scripted(100)
    with _client(server, retries=retries) as client:
        with pytest.raises(myops_client.Unavailable, match="scripted failure"):
            client.scale_shift(X, 2.0, 1.0)
    assert len(server.calls) == retries + 1


def test_other_codes_are_not_retried(scripted):
    server = scripted(100, grpc.StatusCode.RESOURCE_EXHAUSTED)
    with _client(server, retries=3) as client:
        with pytest.raises(myops_client.ResourceExhausted):
            client.scale_shift(X, 2.0, 1.0)
    assert len(server.calls) == 1


def test_server_info_is_retried(scripted):
    server = scripted(1)
    with _client(server, retries=2) as client:
        assert client.server_info()["workers"] == 0  # The empty answer's defaults.
    assert [name for name, _ in server.calls] == ["ServerInfo"] * 2


def test_every_attempt_carries_the_token(scripted):
    server = scripted(2)
    with _client(server, retries=2, token="py.tok") as client:
        client.scale_shift(X, 2.0, 1.0)
        client.server_info()
    assert server.calls == [("ScaleShift", "Bearer py.tok")] * 3 + [("ServerInfo", "Bearer py.tok")]


def test_no_token_sends_no_authorization(scripted):
    server = scripted(0)
    with _client(server, retries=0) as client:
        client.scale_shift(X, 2.0, 1.0)
    assert server.calls == [("ScaleShift", None)]
