"""Per-client shares of the memory budget (--max-client-share): a client that announces
chunked tensors on a CallStream and never sends their chunks (each header reserves its
tensor's whole size) holds at most its share of the budget, the headers beyond it are
refused naming the flag, and another client, on its own connection, still gets its
calls through. With tokens a tenant is one client, whatever connections it uses."""

from __future__ import annotations

import queue
import threading

import grpc
import numpy as np
import pytest

from myops_testing import ServerProcess, poll
from myops_testing.stubs import load_stubs

BUDGET = 64 << 20
SHARE = 0.25  # 16 MiB
ELEMENTS = 1 << 20  # 4 MiB per announced tensor


def header(pb2, request_id: int):
    """The header of a CallStream request whose 4 MiB float32 tensor comes in chunks."""
    request = pb2.CallRequest(op="myops::scale_shift", request_id=request_id)
    tensor = request.arguments.add().value.tensor
    tensor.dtype = pb2.DTYPE_FLOAT32
    tensor.shape.append(ELEMENTS)
    tensor.chunked_byte_size = ELEMENTS * 4
    request.arguments.add().value.float_value = 2.0
    request.arguments.add().value.float_value = 1.0
    return request


class Hoarder:
    """A CallStream on its own channel that sends `count` headers and no chunk, and
    collects the responses (the refusals) as they come."""

    def __init__(self, address: str, count: int, token: str | None = None) -> None:
        pb2, pb2_grpc = load_stubs()
        self.channel = grpc.insecure_channel(address, options=[("grpc.use_local_subchannel_pool", 1)])
        stub = pb2_grpc.MyopsStub(self.channel)
        self.requests: queue.Queue = queue.Queue()
        for i in range(1, count + 1):
            self.requests.put(header(pb2, i))
        metadata = [("authorization", f"Bearer {token}")] if token else None
        self.responses = stub.CallStream(iter(self.requests.get, None), metadata=metadata)
        self.refused: list = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        try:
            for response in self.responses:
                self.refused.append(response)
        except grpc.RpcError:
            pass

    def close(self) -> None:
        self.responses.cancel()
        self.channel.close()


@pytest.fixture
def server():
    s = ServerProcess("--max-inflight-bytes", str(BUDGET), "--max-client-share", str(SHARE),
                      "--stall-timeout-ms", "60000")
    yield s
    s.close()


def held(server) -> float:
    return server.metrics()["myops_memory_held_bytes"]


def test_one_connection_holds_at_most_its_share(server):
    hoarder = Hoarder(server.address, count=10)
    try:
        # 3 headers fit in the 16 MiB share, the other 7 are refused; the budget holds
        # no more than the share.
        assert poll(lambda: len(hoarder.refused) >= 7, 30), hoarder.refused
        refusals = hoarder.refused
        assert all(r.error.code == grpc.StatusCode.RESOURCE_EXHAUSTED.value[0] for r in refusals)
        assert "--max-client-share 0.25" in refusals[0].error.message
        assert 3 * ELEMENTS * 4 <= held(server) <= BUDGET * SHARE
        # Another client is served meanwhile: 2 MiB in, 2 MiB out.
        import myops_client
        x = np.ones(ELEMENTS // 2, np.float32)
        with myops_client.Client(server.address, shared_memory="off") as client:
            np.testing.assert_array_equal(client.scale_shift(x, 2.0, 1.0), 3 * x)
    finally:
        hoarder.close()
    assert poll(lambda: held(server) == 0, 30)


def test_with_tokens_a_tenant_is_one_client_over_its_connections(tmp_path):
    tokens = tmp_path / "tokens"
    tokens.write_text("tenant-one-token\ntenant-two-token\n")
    s = ServerProcess("--max-inflight-bytes", str(BUDGET), "--max-client-share", str(SHARE),
                      "--stall-timeout-ms", "60000", "--auth-token-file", str(tokens))
    hoarders = []
    try:
        # Two connections of one tenant: 3 headers fit in all.
        hoarders = [Hoarder(s.address, count=4, token="tenant-one-token") for _ in range(2)]
        assert poll(lambda: sum(len(h.refused) for h in hoarders) >= 5, 30)
        assert held(s) <= BUDGET * SHARE
        # The other tenant has its own share.
        other = Hoarder(s.address, count=3, token="tenant-two-token")
        hoarders.append(other)
        assert poll(lambda: held(s) >= 6 * ELEMENTS * 4, 30), held(s)
        assert other.refused == []
    finally:
        for h in hoarders:
            h.close()
        s.close()


def test_a_request_larger_than_a_share_says_so(server):
    import myops_client
    x = np.ones(2 * ELEMENTS, np.float32)  # 8 MiB: 24 MiB held with its parse and result
    with myops_client.Client(server.address, shared_memory="off") as client:
        with pytest.raises(myops_client.ResourceExhausted,
                           match=r"more than one client's share of 16777216 bytes "
                                 r"\(--max-client-share 0.25.*send smaller tensors"):
            client.scale_shift(x, 2.0, 1.0)
