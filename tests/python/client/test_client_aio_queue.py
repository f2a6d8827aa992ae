"""The completion queue under myops_client.aio (_core.CompletionQueue) and how the
asyncio client uses it: one eventfd wake-up per batch, re-armed after every drain
(no lost wake-up, even with many threads finishing calls at once), each result
delivered once to its own key and future, errors through the one status mapping,
close() removing the reader and closing the eventfd, and a client moving to a new
loop or dropped without close(). _post() finishes a call from the calling thread
without the GIL, as a gRPC thread does."""

from __future__ import annotations

import asyncio
import gc
import os
import select
import threading
import weakref

import numpy as np
import pytest

import myops_client
import myops_client.aio
from myops_client._core import CompletionQueue


def run(coroutine):
    return asyncio.run(asyncio.wait_for(coroutine, 120))


def readable(queue):
    return bool(select.select([queue.fileno()], [], [], 0)[0])


def test_one_wakeup_per_batch_rearmed_after_each_drain():
    queue = CompletionQueue()
    assert not readable(queue) and queue.drain() == []
    queue._post(1, 10)
    assert readable(queue)
    queue._post(2, 20)
    queue._post(3, 30)
    # Only the first call of the batch wrote the eventfd.
    assert int.from_bytes(os.read(queue.fileno(), 8), "little") == 1
    assert not readable(queue)
    assert queue.drain() == [(1, 10, None), (2, 20, None), (3, 30, None)]
    assert queue.drain() == []
    # The queue is empty again: the next call wakes the loop again.
    queue._post(4, 40)
    assert readable(queue)
    assert queue.drain() == [(4, 40, None)]
    assert not readable(queue)
    queue.close()


def test_errors_go_through_the_status_mapping():
    queue = CompletionQueue()
    queue._post(7, 0, 5)  # NOT_FOUND
    queue._post(8, 0, 99)  # out of range: UNKNOWN, as the C++ client does
    queue._post(9, 1)
    (k1, v1, e1), (k2, v2, e2), (k3, v3, e3) = queue.drain()
    assert (k1, v1, k2, v2) == (7, None, 8, None)
    assert isinstance(e1, myops_client.NotFound) and e1.code == 5
    assert e1.details == "posted error"
    assert isinstance(e2, myops_client.Unknown) and e2.code == 2
    assert (k3, v3, e3) == (9, 1, None)
    queue.close()


def test_close_drops_waiting_and_later_calls():
    queue = CompletionQueue()
    queue._post(1, 1)
    assert not queue.closed
    queue.close()
    assert queue.closed and queue.drain() == []
    with pytest.raises(ValueError, match="closed"):
        queue.fileno()
    queue._post(2, 2)  # a call finishing after close is dropped
    assert queue.drain() == []
    queue.close()  # idempotent
    with pytest.raises(TypeError):
        CompletionQueue(1)


def test_calls_finished_by_many_threads_reach_the_loop_once_each():
    """8 threads finish 20,000 calls in bursts while the loop drains on each
    wake-up: a lost wake-up leaves calls in the queue and the wait times out; a
    duplicated, lost or misdelivered call fails the comparison."""
    threads, per_thread = 8, 2500
    total = threads * per_thread
    queue = CompletionQueue()

    def finish(first):
        for i in range(per_thread):
            key = first + i
            queue._post(key, key * 3)
            if i % 64 == 0:
                threading.Event().wait(0.0005)  # let the queue run empty

    async def main():
        loop = asyncio.get_running_loop()
        seen = []
        everything = loop.create_future()

        def on_readable():
            seen.extend(queue.drain())
            if len(seen) >= total and not everything.done():
                everything.set_result(None)

        loop.add_reader(queue.fileno(), on_readable)
        workers = [threading.Thread(target=finish, args=(t * per_thread,))
                   for t in range(threads)]
        for w in workers:
            w.start()
        try:
            await asyncio.wait_for(everything, 60)
        finally:
            loop.remove_reader(queue.fileno())
            for w in workers:
                w.join()
        return seen

    seen = run(main())
    assert sorted(key for key, _, _ in seen) == list(range(total))
    assert all(value == key * 3 and error is None for key, value, error in seen)
    # Each thread's calls come out in the order it finished them.
    for t in range(threads):
        mine = [key for key, _, _ in seen if key // per_thread == t]
        assert mine == sorted(mine)
    queue.close()


def test_results_go_to_their_own_futures_with_errors_interleaved(server):
    rng = np.random.default_rng(11)
    xs = [rng.standard_normal(int(rng.integers(1, 300))).astype(np.float32)
          for _ in range(300)]

    async def one(aio, i, x):
        if i % 7 == 3:  # rejected by the server
            return await aio.scale_shift(x.astype(np.int32), 2.0, float(i))
        if i % 7 == 5:  # no such device on the server
            return await aio.scale_shift(x, 2.0, float(i), device="cuda:7")
        return await aio.scale_shift(x, 2.0, float(i))

    async def main():
        async with myops_client.aio.Client(server.address) as aio:
            outcomes = await asyncio.gather(*(one(aio, i, x) for i, x in enumerate(xs)),
                                            return_exceptions=True)
            assert not aio._in_flight
            return outcomes

    for i, (x, outcome) in enumerate(zip(xs, run(main()))):
        if i % 7 == 3:
            assert isinstance(outcome, myops_client.InvalidArgument), (i, outcome)
        elif i % 7 == 5:
            assert isinstance(outcome, myops_client.FailedPrecondition), (i, outcome)
        else:
            np.testing.assert_array_equal(outcome, x * np.float32(2.0) + np.float32(i))


def test_one_call_at_a_time_never_misses_a_wakeup(server):
    x = np.arange(16, dtype=np.float32)

    async def main():
        async with myops_client.aio.Client(server.address) as aio:
            for i in range(500):
                y = await aio.scale_shift(x, 1.0, float(i))
                assert y[0] == i

    run(main())


def test_close_removes_the_reader_and_closes_the_eventfd(server):
    async def main():
        loop = asyncio.get_running_loop()
        aio = myops_client.aio.Client(server.address)
        await aio.health()
        queue = aio._queue
        fd = queue.fileno()
        await aio.close()
        assert queue.closed
        assert not loop.remove_reader(fd)  # was not registered any more
        with pytest.raises(ValueError, match="closed"):
            await aio.health()
        await aio.close()

    run(main())


def test_a_client_moves_to_the_next_loop(server):
    aio = myops_client.aio.Client(server.address)
    x = np.ones(4, np.float32)
    assert np.array_equal(asyncio.run(aio.scale_shift(x, 2.0, 0.0)), x * 2)
    assert np.array_equal(asyncio.run(aio.scale_shift(x, 3.0, 0.0)), x * 3)
    asyncio.run(aio.close())
    assert aio._queue.closed


def test_a_client_dropped_without_close_is_collected(server):
    async def main():
        aio = myops_client.aio.Client(server.address)
        await aio.health()
        queue = aio._queue
        gone = weakref.ref(aio)
        del aio
        gc.collect()
        assert gone() is None  # the loop's reader holds it weakly
        queue._post(0, 0)  # the next wake-up removes the reader
        while not queue.closed:
            await asyncio.sleep(0.001)

    run(main())
