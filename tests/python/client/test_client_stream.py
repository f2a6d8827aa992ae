"""Streams of the Python client (Client.stream, myops_client.aio.Client.stream) against a
real myops-server: results in send order, errors per request that leave the stream
going, cancellation, timing on every result, chunked tensors beyond the message limit
(and, labelled large, beyond 2 GiB); plus the ordering logic on its own with responses
fed in reverse."""

from __future__ import annotations

import asyncio
import threading
import time

import numpy as np
import pytest

import myops_client
import myops_client.aio
from myops_client import _ops, _stream
from myops_testing import quick_server

from client_helpers import reference

OP = "myops::scale_shift"


def batches(count: int, seed: int = 3) -> list[np.ndarray]:
    """float32 arrays of very different sizes, so that the server finishes them out of
    order."""
    rng = np.random.default_rng(seed)
    sizes = [1 << 20 if i % 5 == 0 else 1 + i for i in range(count)]
    return [rng.standard_normal(n).astype(np.float32) for n in sizes]


def test_map_yields_every_result_in_send_order(client):
    xs = batches(40)
    with client.stream(OP) as stream:
        ys = list(stream.map(((x, 2.0, float(i)) for i, x in enumerate(xs)), depth=8))
    assert len(ys) == len(xs)
    for i, (x, y) in enumerate(zip(xs, ys)):
        np.testing.assert_array_equal(y, reference(x, 2.0, float(i)), err_msg=f"request {i}")


def test_send_and_receive_pipeline_and_return_request_ids(client):
    xs = batches(12)
    with client.stream(OP) as stream:
        ids = [stream.send(x, 4.0, beta=-float(i)) for i, x in enumerate(xs)]
        assert ids == list(range(1, 13))
        for i, x in enumerate(xs):
            np.testing.assert_array_equal(stream.receive(), reference(x, 4.0, -float(i)))
        with pytest.raises(ValueError, match="no request is waiting"):
            stream.receive()


def test_a_failed_request_raises_its_error_and_the_stream_goes_on(client):
    x = np.arange(6, dtype=np.float32)
    with client.stream(OP) as stream:
        stream.send(x, 2.0, 1.0)
        stream.send(np.arange(6, dtype=np.int32), 2.0, 1.0)  # the server refuses ints
        stream.send(x, 2.0, 3.0)
        np.testing.assert_array_equal(stream.receive(), reference(x, 2.0, 1.0))
        with pytest.raises(myops_client.InvalidArgument, match="dtype"):
            stream.receive()
        np.testing.assert_array_equal(stream.receive(), reference(x, 2.0, 3.0))
        # Bound here, before sending: TypeError, nothing sent, the stream goes on.
        with pytest.raises(TypeError, match="alpha"):
            stream.send(x, "two", 1.0)
        stream.send(x, 0.5, 0.0)
        np.testing.assert_array_equal(stream.receive(), reference(x, 0.5, 0.0))


def test_map_returns_exceptions_in_place_when_asked(client):
    x = np.arange(4, dtype=np.float64)
    requests = [(x, 2.0, 0.0), (x.astype(np.int64), 2.0, 0.0), (x, 2.0, 1.0)]
    with client.stream(OP) as stream:
        out = list(stream.map(requests, return_exceptions=True))
        assert isinstance(out[1], myops_client.InvalidArgument)
        np.testing.assert_array_equal(out[2], reference(x, 2.0, 1.0))
        with pytest.raises(myops_client.InvalidArgument):
            list(stream.map(requests))


def test_every_result_carries_the_servers_timing(client):
    x = np.ones(256, dtype=np.float32)
    with client.stream(OP, return_timing=True) as stream:
        for y, timing in stream.map([(x, 2.0, 1.0)] * 3):
            np.testing.assert_array_equal(y, np.full(256, 3.0, np.float32))
            assert isinstance(timing, myops_client.Timing)
            assert timing.device == "cpu" and timing.replica
            assert 0 < timing.compute_ns <= timing.total_ns
    y, timing = client.call(OP, x, 2.0, 1.0, return_timing=True)
    np.testing.assert_array_equal(y, np.full(256, 3.0, np.float32))
    assert timing.device == "cpu" and timing.replica and timing.total_ns > 0


def test_cancel_ends_a_receive_waiting_on_another_thread(client):
    x = np.arange(8, dtype=np.float32)
    stream = client.stream(OP)
    stream.send(x, 2.0, 1.0)
    np.testing.assert_array_equal(stream.receive(), reference(x, 2.0, 1.0))
    # Nothing more is sent: the native receive waits until cancel() ends the stream.
    errors: list[BaseException] = []

    def receiver() -> None:
        try:
            stream._native._receive()
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    thread = threading.Thread(target=receiver)
    thread.start()
    time.sleep(0.2)
    assert thread.is_alive()
    stream.cancel()
    thread.join(10)
    assert not thread.is_alive()
    assert len(errors) == 1 and isinstance(errors[0], myops_client.Cancelled), errors
    with pytest.raises(myops_client.FailedPrecondition):
        stream.send(x, 2.0, 1.0)
    stream.close()  # after cancel(): no error


def test_an_exception_in_the_with_block_cancels_the_stream(client):
    x = np.arange(8, dtype=np.float32)
    with pytest.raises(RuntimeError, match="boom"):
        with client.stream(OP) as stream:
            stream.send(x, 2.0, 1.0)
            raise RuntimeError("boom")
    assert stream._native.ended
    with pytest.raises(myops_client.FailedPrecondition):
        stream.send(x, 2.0, 1.0)


def test_the_streams_deadline_ends_it(client):
    stream = client.stream(OP, timeout=0.3)
    time.sleep(0.5)
    with pytest.raises((myops_client.DeadlineExceeded, myops_client.FailedPrecondition)):
        stream.send(np.ones(4, np.float32), 2.0, 1.0)
        stream.receive()
    with pytest.raises(myops_client.DeadlineExceeded):
        stream.close()


def test_unknown_operators_and_bad_options_fail_before_opening(client):
    with pytest.raises(ValueError, match="not listed"):
        client.stream("myops::no_such_op")
    with pytest.raises(TypeError, match="device"):
        client.stream(OP, device=0)  # type: ignore[arg-type]
    with client.stream(OP) as stream:
        with pytest.raises(ValueError, match="depth"):
            list(stream.map([], depth=0))


def test_tensors_over_the_message_limit_go_in_chunks_both_ways(server):
    # A 64 KiB client limit: a 1 MiB tensor goes out in chunks and its result comes
    # back in chunks, reassembled.
    with myops_client.Client(server.address, max_message_bytes=64 << 10,
                             shared_memory="off") as small:
        x = np.random.default_rng(5).standard_normal(1 << 18).astype(np.float32)
        with pytest.raises(myops_client.InvalidArgument):
            small.call(OP, x, 2.0, 1.0)  # one message cannot carry it
        with small.stream(OP) as stream:
            ys = list(stream.map([(x, 2.0, 1.0), (x[:10], 2.0, 0.0), (x, 0.5, 0.0)]))
        np.testing.assert_array_equal(ys[0], reference(x, 2.0, 1.0))
        np.testing.assert_array_equal(ys[1], reference(x[:10], 2.0, 0.0))
        np.testing.assert_array_equal(ys[2], reference(x, 0.5, 0.0))


class _ReversedNative:
    """A CallStream stand-in that answers the requests only once all are sent, and
    then last first (the int result of request i is 10 * i)."""

    def __init__(self) -> None:
        self.sent = 0
        self.items: list[tuple[int, object, BaseException | None]] | None = None
        self.ended = False

    def _send(self, op: str, arguments: list) -> int:
        self.sent += 1
        return self.sent

    def _receive(self):
        if self.items is None:
            self.items = [(i, ([(2, 10 * i)], None), None)
                          for i in range(self.sent, 0, -1)]
        return self.items.pop(0)


def test_results_come_back_in_send_order_whatever_order_they_arrive_in():
    catalog = _ops.Catalog([{
        "name": "ns::op", "arguments": [{"name": "n", "type": "int", "kind": "int"}],
        "returns": [{"name": "", "type": "int", "kind": "int"}]}])
    stream = _stream.Stream(_ReversedNative(), catalog, "ns::op",  # type: ignore[arg-type]
                            _ops.Context(lambda *a: None))
    assert [stream.send(n) for n in range(5)] == [1, 2, 3, 4, 5]
    assert [stream.receive() for _ in range(5)] == [10, 20, 30, 40, 50]


# ---- asyncio -------------------------------------------------------------------------


def test_aio_stream_maps_in_order_with_errors_in_place(server):
    xs = batches(30, seed=9)

    async def main() -> None:
        async with myops_client.aio.Client(server.address) as client:
            async with await client.stream(OP, return_timing=True) as stream:
                requests = [(x, 2.0, float(i)) for i, x in enumerate(xs)]
                requests[7] = (xs[7].astype(np.int32), 2.0, 7.0)
                out = [r async for r in stream.map(requests, depth=6,
                                                   return_exceptions=True)]
                assert isinstance(out[7], myops_client.InvalidArgument)
                for i, x in enumerate(xs):
                    if i != 7:
                        y, timing = out[i]
                        np.testing.assert_array_equal(y, reference(x, 2.0, float(i)))
                        assert timing.device == "cpu"
                # send/receive, and an async iterable of requests
                await stream.send(xs[1], 2.0, 0.0)
                y, _ = await stream.receive()
                np.testing.assert_array_equal(y, reference(xs[1], 2.0, 0.0))

                async def more():
                    for i in range(3):
                        yield (xs[2], 2.0, float(i))
                got = [y async for y, _ in stream.map(more())]
                for i, y in enumerate(got):
                    np.testing.assert_array_equal(y, reference(xs[2], 2.0, float(i)))
            y, timing = await client.call(OP, xs[0], 2.0, 1.0, return_timing=True)
            assert timing.replica and timing.device == "cpu"

    asyncio.run(main())


def test_aio_stream_cancel_and_client_close(server):
    x = np.arange(16, dtype=np.float32)

    async def main() -> None:
        client = myops_client.aio.Client(server.address)
        stream = await client.stream(OP)
        await stream.send(x, 2.0, 1.0)
        np.testing.assert_array_equal(await stream.receive(), reference(x, 2.0, 1.0))
        stream.cancel()
        await stream.close()  # no error after cancel()
        with pytest.raises(myops_client.FailedPrecondition):
            await stream.send(x, 2.0, 1.0)
        # close() of the client cancels the streams still open and waits for their end.
        other = await client.stream(OP)
        await other.send(x, 2.0, 1.0)
        await client.close()
        assert other._ended
        with pytest.raises(myops_client.FailedPrecondition):
            await other.send(x, 2.0, 1.0)

    asyncio.run(main())


@pytest.mark.large
def test_a_tensor_above_2_gib_round_trips_on_a_stream():
    """2^29 + 16 float32 elements (2 GiB + 64 bytes), beyond gRPC's message limit: sent
    in chunks, the result reassembled (about 8 GiB between client and server)."""
    # One client holds about 4 GiB: beyond the default share of the default budget here.
    server = quick_server("--max-elements", str(1 << 30), "--max-client-share", "1")
    try:
        n = (1 << 29) + 16
        x = np.resize((np.arange(4093) - 2000).astype(np.float32), n)  # x[i] = i % 4093 - 2000
        with myops_client.Client(server.address, timeout=300.0) as client:
            with client.stream(OP) as stream:
                stream.send(x, 2.0, 0.5)
                del x
                y = stream.receive()
        assert y.shape == (n,) and y.dtype == np.float32
        for i in (0, 1, 4092, 4093, n // 2, n - 17, n - 1):
            assert y[i] == np.float32(i % 4093 - 2000) * 2 + 0.5, i
    finally:
        server.stop()
