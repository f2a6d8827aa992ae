"""The native core of myops_client as a CPython extension: thread-safety and the GIL,
reference counts and memory over many calls, cyclic GC of Client subclasses, and the
buffer protocol of Result (views keep it alive; release refused while exported)."""

from __future__ import annotations

import gc
import sys
import threading
import time
import tracemalloc
import weakref

import numpy as np
import pytest

import myops_client
from myops_client import _core
from client_helpers import reference


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


# ---- threads and the GIL ----------------------------------------------------

def test_threads_share_one_client(client):
    errors = []

    def work(seed):
        try:
            rng = np.random.default_rng(seed)
            for i in range(100):
                x = rng.standard_normal(1 + (seed * 37 + i) % 3000)
                x = x.astype(np.float32)
                y = client.scale_shift(x, 2.0, float(seed))
                np.testing.assert_array_equal(y, reference(x, 2.0, seed))
        except BaseException as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


@pytest.mark.serial  # Times four calls against a deadline.
def test_gil_released_during_calls(silent_server):
    # Four calls that each block for 0.5 s overlap: with the GIL held they
    # would take 2 s, and the main thread could not count meanwhile.
    client = myops_client.Client(silent_server, timeout=0.5)
    done = []

    def call():
        with pytest.raises(myops_client.DeadlineExceeded):
            client.scale_shift(np.ones(3, np.float32), 2.0, 1.0)
        done.append(1)

    threads = [threading.Thread(target=call) for _ in range(4)]
    start = time.monotonic()
    for t in threads:
        t.start()
    spins = 0
    while any(t.is_alive() for t in threads):
        spins += 1
    elapsed = time.monotonic() - start
    assert len(done) == 4
    assert elapsed < 1.8, elapsed  # serialized: >= 2 s
    assert spins > 1000


def test_close_while_calls_in_flight(client):
    # Closing a shared client while other threads call it is safe: each call
    # either completes or raises ValueError("closed").
    outcomes = []

    def work():
        x = np.ones(4096, np.float32)
        for _ in range(100_000):
            try:
                y = client.scale_shift(x, 2.0, 1.0)
                assert (y == 3).all()
                outcomes.append("ok")
            except ValueError:
                outcomes.append("closed")
                return

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    time.sleep(0.05)
    client.close()
    for t in threads:
        t.join()
    assert outcomes.count("closed") == 4


# ---- reference counts and memory --------------------------------------------

def test_refcounts_and_memory_stable(client):
    x = np.arange(256, dtype=np.float32)
    alpha, beta, device = float("2.0"), float("0.5"), "".join(["c", "pu"])
    objects = [x, alpha, beta, device, _core.Result, _core.Timing,
               myops_client.Client]

    def run(n):
        for _ in range(n):
            y, timing = client.scale_shift(x, alpha, beta, device=device,
                                           return_timing=True)
        return y, timing

    run(200)  # warm up: gRPC buffers, numpy caches
    gc.collect()
    counts = [sys.getrefcount(o) for o in objects]
    rss = rss_bytes()
    tracemalloc.start()
    try:
        traced = tracemalloc.get_traced_memory()[0]
        y, timing = run(10_000)
        del y, timing
        gc.collect()
        growth = tracemalloc.get_traced_memory()[0] - traced
    finally:
        tracemalloc.stop()
    assert [sys.getrefcount(o) for o in objects] == counts
    assert growth < 64 << 10, growth
    assert rss_bytes() - rss < 16 << 20


def test_refcounts_stable_on_errors(client):
    x = np.ones(16, np.float32)
    cls = myops_client.FailedPrecondition

    def fail(n):
        for _ in range(n):
            try:
                client.scale_shift(x, 2.0, 1.0, device="cuda:0")
            except cls:
                pass

    fail(100)
    gc.collect()
    counts = sys.getrefcount(x), sys.getrefcount(cls)
    fail(2000)
    gc.collect()
    assert (sys.getrefcount(x), sys.getrefcount(cls)) == counts


# ---- cyclic GC ---------------------------------------------------------------

def test_cycle_through_client_subclass_is_collected(server):
    # The extension-type guide's test: a cycle through an instance of a subclass.
    class Derived(myops_client.Client):
        pass

    base = sys.getrefcount(Derived)
    gc.collect()
    gc.disable()
    try:
        d = Derived(server.address)
        d.cycle = [d]
        assert gc.is_tracked(d)
        ref = weakref.ref(d)
        del d
        assert ref() is not None  # only the cycle holds it
        assert sys.getrefcount(Derived) > base
        gc.collect()
        assert ref() is None
        assert sys.getrefcount(Derived) == base
    finally:
        gc.enable()


def test_cycle_through_core_client_dict(server):
    gc.disable()
    try:
        c = _core.Client(server.address)
        c.me = c
        assert c.__dict__ == {"me": c}
        ref = weakref.ref(c)
        del c
        assert ref() is not None
        gc.collect()
        assert ref() is None
    finally:
        gc.enable()


def test_subclass_can_extend(server):
    class Logged(myops_client.Client):
        def __init__(self, target, **kwargs):
            super().__init__(target, **kwargs)
            self.calls = 0

        def scale_shift(self, x, alpha, beta, **kwargs):
            self.calls += 1
            return super().scale_shift(x, alpha, beta, **kwargs)

    with Logged(server.address, timeout=5) as c:
        assert (c.scale_shift(np.ones(2, np.float32), 2.0, 1.0) == 3).all()
        assert c.calls == 1 and c.timeout == 5.0
        assert repr(c).startswith("<Logged ")


# ---- Result and the buffer protocol -----------------------------------------

def test_view_keeps_result_alive(client):
    x = np.arange(1000, dtype=np.float64)
    result = client._scale_shift(2, x.shape, x, 2.0, 1.0)
    assert isinstance(result, _core.Result)
    view = memoryview(result)
    assert view.nbytes == 8000 and not view.readonly
    del result
    gc.collect()
    _ = [np.ones(1000) for _ in range(100)]  # churn the allocator
    np.testing.assert_array_equal(np.frombuffer(view, np.float64), 2 * x + 1)
    view.release()


def test_numpy_output_keeps_result_alive(client):
    x = np.arange(1000, dtype=np.float32)
    y = client.scale_shift(x, 2.0, 1.0)
    owner = y.base
    while isinstance(owner, np.ndarray):
        owner = owner.base
    assert isinstance(owner, memoryview)  # np.frombuffer's view of the Result
    assert isinstance(owner.obj, _core.Result)
    ref = weakref.ref(y)
    del owner
    gc.collect()
    _ = [np.ones(1000) for _ in range(100)]  # churn the allocator
    np.testing.assert_array_equal(y, 2 * x + 1)
    assert ref() is y


def test_release_refused_while_exported(client):
    x = np.ones(64, np.float32)
    result = client._scale_shift(1, x.shape, x, 2.0, 1.0)
    views = [memoryview(result), memoryview(result)]
    with pytest.raises(BufferError, match="2 buffer view"):
        result.release()
    views[0].release()
    with pytest.raises(BufferError, match="1 buffer view"):
        result.release()
    views[1].release()
    result.release()
    assert result.released and result.nbytes == 0 and "released" in repr(result)
    with pytest.raises(BufferError, match="released"):
        memoryview(result)
    result.release()  # idempotent


def test_result_properties(client):
    x = np.ones((2, 3), np.float16)
    result = client._scale_shift(3, x.shape, x, 2.0, 1.0, "cpu", 5.0)
    assert result.dtype == 3 and result.shape == (2, 3)
    assert result.nbytes == 12
    assert result.timing is result.timing  # created once
    assert result.timing.device == "cpu"
    assert "float16 [2, 3], 12 bytes" in repr(result)
    with pytest.raises(TypeError):
        _core.Result()
    with pytest.raises(AttributeError):
        result.dtype = 1
