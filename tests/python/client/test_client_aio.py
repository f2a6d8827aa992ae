"""myops_client.aio.Client against the real server (and call_peer.py, a grpcio server
that sees cancellations): results equal to the blocking client's, hundreds of
concurrent awaits, cancellation of the awaiting task cancelling the RPC, errors as the
same exception classes, and closing with calls in flight. Each test runs its own event
loop (asyncio.run)."""

from __future__ import annotations

import asyncio
import os
import pathlib
import select
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import myops_client
import myops_client.aio

PEER = pathlib.Path(__file__).with_name("call_peer.py")


def run(coroutine):
    return asyncio.run(asyncio.wait_for(coroutine, 120))


def readable(queue):
    """Whether the queue's eventfd is readable now (without waiting)."""
    return bool(select.select([queue.fileno()], [], [], 0)[0])


@pytest.fixture(scope="module")
def peer():
    process = subprocess.Popen([sys.executable, str(PEER)], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True)
    line = process.stdout.readline()
    if not line.startswith("listening on "):
        process.kill()
        pytest.fail(f"call_peer.py did not start: {line!r}")
    yield line.split()[-1]
    process.stdin.close()
    process.wait(timeout=30)


def inputs():
    rng = np.random.default_rng(7)
    return [rng.standard_normal((3, 4)).astype(np.float32),
            rng.standard_normal(1000).astype(np.float64),
            rng.standard_normal((4, 6)).astype(np.float16)[:, ::2],  # not contiguous
            np.zeros((0, 3), np.float32)]


def test_scale_shift_equals_the_blocking_client(server, client):
    async def main():
        async with myops_client.aio.Client(server.address) as aio:
            out = []
            for x in inputs():
                y, timing = await aio.scale_shift(x, 2.5, -1.0, return_timing=True)
                assert isinstance(timing, myops_client.Timing)
                assert timing.device == "cpu"
                out.append((y, await aio.scale_shift(x, 2.5, -1.0, device="cpu",
                                                     timeout=10)))
            return out

    for x, (y, again) in zip(inputs(), run(main())):
        expected = client.scale_shift(x, 2.5, -1.0)
        assert y.dtype == expected.dtype and y.shape == expected.shape
        assert np.array_equal(y, expected) and np.array_equal(again, expected)


def test_scale_shift_of_torch_tensors(server, client):
    torch = pytest.importorskip("torch")
    x = torch.randn(5, 7, dtype=torch.float64)

    async def main():
        async with myops_client.aio.Client(server.address) as aio:
            return await aio.scale_shift(x, 3.0, 0.5)

    y = run(main())
    assert isinstance(y, torch.Tensor) and torch.equal(y, client.scale_shift(x, 3.0, 0.5))


def test_call_and_ops_equal_the_blocking_client(server, client):
    x = inputs()[0]

    async def main():
        async with myops_client.aio.Client(server.address) as aio:
            early = aio.ops.myops.scale_shift  # named before the listing is loaded
            assert "not listed yet" in repr(early)
            first = await early(x, 2.0, 1.0)
            by_name = await aio.call("myops::scale_shift", x, alpha=2.0, beta=1.0)
            tree = aio.ops
            assert "myops" in dir(tree) and "scale_shift" in dir(tree.myops)
            packet = await tree.myops.scale_shift(x, 2.0, 1.0)
            overload = await aio.ops.myops.scale_shift.default(x, 2.0, 1.0)
            timed, timing = await aio.with_options(
                return_timing=True, device="cpu").ops.myops.scale_shift(x, 2.0, 1.0)
            assert timing.device == "cpu"
            with pytest.raises(TypeError, match="beta"):  # checked before sending
                await aio.ops.myops.scale_shift(x, 2.0)
            with pytest.raises(ValueError, match="not listed"):
                await aio.call("myops::no_such_op", x)
            return [first, by_name, packet, overload, timed]

    expected = client.ops.myops.scale_shift(x, 2.0, 1.0)
    assert np.array_equal(expected, client.call("myops::scale_shift", x, 2.0, 1.0))
    for y in run(main()):
        assert np.array_equal(y, expected)


def test_info_calls_equal_the_blocking_client(server, client):
    async def main():
        async with myops_client.aio.Client(server.address) as aio:
            return (await aio.server_info(), await aio.list_operators(timeout=10),
                    await aio.health(), await aio.health(""))

    info, listing, healthy, healthy_too = run(main())
    assert info == client.server_info()
    assert listing == client.list_operators()
    assert healthy is True and healthy_too is True


def test_500_concurrent_awaits_are_all_correct(server):
    rng = np.random.default_rng(3)
    xs = [rng.standard_normal(256).astype(np.float32) for _ in range(500)]

    async def main():
        async with myops_client.aio.Client(server.address) as aio:
            await aio.refresh_operators()
            calls = [aio.scale_shift(x, 2.0, float(i)) if i % 2 else
                     aio.ops.myops.scale_shift(x, 2.0, float(i))
                     for i, x in enumerate(xs)]
            return await asyncio.gather(*calls)

    ys = run(main())
    assert len(ys) == 500
    for i, (x, y) in enumerate(zip(xs, ys)):
        np.testing.assert_array_equal(y, x * np.float32(2.0) + np.float32(i))


def test_input_may_change_once_the_call_has_started(server):
    x = np.arange(1000, dtype=np.float32)
    original = x.copy()

    async def main():
        async with myops_client.aio.Client(server.address) as aio:
            task = asyncio.ensure_future(aio.scale_shift(x, 2.0, 1.0))
            await asyncio.sleep(0)  # the task runs up to its await: the RPC started
            x[:] = -7.0
            return await task

    assert np.array_equal(run(main()), original * 2.0 + 1.0)


async def hang_counts(aio):
    started, cancelled = await aio.call("test::hangs")
    return started, cancelled


async def wait_for_counts(aio, predicate):
    """Asks the peer until its hang counts satisfy `predicate` (bounded by run())."""
    while True:
        counts = await hang_counts(aio)
        if predicate(counts):
            return counts
        await asyncio.sleep(0.01)


def test_cancelling_the_task_cancels_the_rpc(peer):
    async def main():
        async with myops_client.aio.Client(peer) as aio:
            started, cancelled = await hang_counts(aio)
            task = asyncio.ensure_future(aio.call("test::hang"))
            await wait_for_counts(aio, lambda c: c[0] == started + 1)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            # The server saw the RPC end before its deadline (30 s): cancelled.
            await wait_for_counts(aio, lambda c: c[1] == cancelled + 1)
            # The client stays usable.
            assert await aio.call("test::echo", np.ones(2, np.float32), n=3) == (
                pytest.approx(np.ones(2)), "n", 3)
            assert not aio._in_flight

    run(main())


def test_cancelling_many_large_requests_leaves_the_client_usable(server):
    x = np.ones(1 << 20, np.float32)  # 4 MiB

    async def main():
        async with myops_client.aio.Client(server.address) as aio:
            tasks = [asyncio.ensure_future(aio.scale_shift(x, 1.0, float(i)))
                     for i in range(24)]
            await asyncio.sleep(0)  # every call started
            for task in tasks[::2]:
                task.cancel()
            results = await asyncio.gather(*tasks, return_exceptions=True)
            for task in tasks[::2]:
                assert task.cancelled()
            for i, result in enumerate(results):
                if i % 2:
                    assert np.array_equal(result, x + i)
                else:
                    assert isinstance(result, asyncio.CancelledError)
            assert not aio._in_flight
            return await aio.scale_shift(x[:4], 2.0, 0.0)

    assert np.array_equal(run(main()), np.full(4, 2.0, np.float32))


def test_errors_raise_the_blocking_clients_exception_classes(server, client, peer,
                                                             closed_port):
    ints = np.arange(4, dtype=np.int32)
    with pytest.raises(myops_client.InvalidArgument) as blocking:
        client.scale_shift(ints, 2.0, 1.0)

    async def main():
        async with myops_client.aio.Client(server.address) as aio:
            with pytest.raises(myops_client.InvalidArgument) as caught:
                await aio.scale_shift(ints, 2.0, 1.0)
            assert caught.value.code == blocking.value.code
            assert caught.value.details == blocking.value.details
            with pytest.raises(myops_client.FailedPrecondition):
                await aio.scale_shift(inputs()[0], 2.0, 1.0, device="cuda:7")
            with pytest.raises(TypeError, match="complex"):
                await aio.scale_shift(np.ones(2, np.complex64), 2.0, 1.0)
        async with myops_client.aio.Client(peer) as aio:
            with pytest.raises(myops_client.InvalidArgument,
                               match="always wrong"):
                await aio.call("test::fail")
            with pytest.raises(myops_client.DeadlineExceeded):
                await aio.with_options(timeout=0.2).call("test::hang")
        async with myops_client.aio.Client(closed_port, retries=0) as aio:
            with pytest.raises(myops_client.Unavailable):
                await aio.server_info()
            with pytest.raises(myops_client.Unavailable):
                await aio.health()

    run(main())


def test_invalid_input_completes_before_the_start_returns(server):
    """The native start reports an input the C++ client rejects by finishing the
    call into its queue on the starting thread, before _start_scale_shift returns:
    the eventfd is readable at once and drain() hands the error to its key."""
    core = myops_client.Client(server.address)
    queue = myops_client._core.CompletionQueue()
    assert not readable(queue)
    pending = core._start_scale_shift(queue, 41, 1, (2,), bytes(4), 1.0, 1.0)
    assert readable(queue)
    (key, value, error), = queue.drain()
    assert key == 41 and value is None
    assert isinstance(error, myops_client.InvalidArgument)
    assert not readable(queue) and queue.drain() == []
    pending.cancel()  # of a finished call: nothing happens
    assert queue.drain() == []
    with pytest.raises(TypeError, match="CompletionQueue"):
        core._start_scale_shift(None, 1, 1, (1,), bytes(4), 1.0, 1.0)
    with pytest.raises(TypeError, match="key"):
        core._start_scale_shift(queue, "1", 1, (1,), bytes(4), 1.0, 1.0)
    with pytest.raises(OverflowError):
        core._start_scale_shift(queue, -1, 1, (1,), bytes(4), 1.0, 1.0)
    with pytest.raises(TypeError):
        type(pending)()
    queue.close()
    with pytest.raises(ValueError, match="closed"):
        core._start_scale_shift(queue, 1, 1, (1,), bytes(4), 1.0, 1.0)
    core.close()


def test_close_with_calls_in_flight_cancels_them(server, silent_server):
    async def main():
        aio = myops_client.aio.Client(silent_server, timeout=60)
        tasks = [asyncio.ensure_future(aio.scale_shift(np.ones(8, np.float32), 1, 1))
                 for _ in range(50)]
        await asyncio.sleep(0)
        await aio.close()  # returns once every call has ended
        assert aio.closed and not aio._in_flight
        for task in tasks:
            with pytest.raises(myops_client.Cancelled):
                await task
        with pytest.raises(ValueError, match="closed"):
            await aio.scale_shift(np.ones(2, np.float32), 1.0, 1.0)
        await aio.close()  # idempotent

        busy = myops_client.aio.Client(server.address)
        x = np.ones(1 << 18, np.float32)
        tasks = [asyncio.ensure_future(busy.scale_shift(x, 1.0, 1.0)) for _ in range(50)]
        await asyncio.sleep(0)
        await busy.close()
        for outcome in await asyncio.gather(*tasks, return_exceptions=True):
            assert isinstance(outcome, myops_client.Cancelled) or np.array_equal(
                outcome, x + 1.0)

    run(main())


def test_exit_with_calls_in_flight_and_no_close(silent_server):
    """A script that leaves calls in flight, never closes its client and ends its
    loop and its interpreter exits normally."""
    script = textwrap.dedent(f"""
        import asyncio, numpy as np, myops_client.aio
        async def main():
            aio = myops_client.aio.Client({silent_server!r}, timeout=0.5)
            for _ in range(20):
                asyncio.ensure_future(aio.scale_shift(np.ones(4, np.float32), 1, 1))
            await asyncio.sleep(0)
        asyncio.run(main())
        print("exited main")
    """)
    # The myops_client these tests import (the build tree's, or an installed one).
    package_root = pathlib.Path(myops_client.__file__).parents[1]
    env = {**os.environ, "PYTHONPATH": str(package_root)}
    finished = subprocess.run([sys.executable, "-c", script], capture_output=True,
                              text=True, timeout=60, env=env)
    assert finished.returncode == 0, finished.stderr
    assert "exited main" in finished.stdout
