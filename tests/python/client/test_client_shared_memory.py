"""The Python client's shared memory (Client(shared_memory=...)) against real
servers: arrays larger than the client's message limit reach a server started with
--allow-shared-memory only through the client's regions, so a call that succeeds
proves they did; blocking, asyncio and generic calls; the regions are reused and
unregistered on close(); without the server's consent "auto" goes inline and "on"
fails."""

from __future__ import annotations

import asyncio
import os

import numpy as np
import pytest

import myops_client
from myops_client import aio

from myops_testing import quick_server

if os.environ.get("MYOPS_TEST_LAUNCHER"):
    # scripts/wheel_container_test.sh: the servers run on the host, outside this
    # container's /dev/shm, so they cannot map the client's regions ("auto" then goes
    # inline, which the rest of the suite covers).
    pytest.skip("the servers run outside this container's shared memory",
                allow_module_level=True)
grpcclient = pytest.importorskip("tritonclient.grpc")

SMALL = 64 << 10  # the clients' message limit: larger arrays cannot travel inline


@pytest.fixture(scope="module")
def shm_server():
    s = quick_server("--allow-shared-memory")
    yield s
    s.stop()


@pytest.fixture(scope="module")
def plain_server():
    s = quick_server()
    yield s
    s.stop()


def regions(server) -> list[str]:
    with grpcclient.InferenceServerClient(server.address) as triton:
        status = triton.get_system_shared_memory_status(as_json=True)
    return [r["name"] for r in status.get("regions", {}).values()]


def mine(server) -> int:
    return len([r for r in regions(server) if r.startswith("myops_client_")])


def ramp(n: int) -> np.ndarray:
    return (np.arange(n, dtype=np.float32) % 1000)


def test_scale_shift_and_call_go_through_shared_memory(shm_server):
    x = ramp(1 << 20)  # 4 MiB
    with myops_client.Client(shm_server.address, max_message_bytes=SMALL) as c:
        for _ in range(3):
            np.testing.assert_array_equal(c.scale_shift(x, 2.0, 1.0), 2 * x + 1)
            np.testing.assert_array_equal(c.call("myops::scale_shift", x, 0.5, beta=2.0),
                                          0.5 * x + 2)
            np.testing.assert_array_equal(c.ops.myops.scale_shift(x, 3.0, 0.0), 3 * x)
        assert mine(shm_server) == 1  # one region, reused by every call
    assert mine(shm_server) == 0


def test_results_view_their_region_until_they_are_gone(shm_server):
    """A result array views the region the server wrote it to (no copy): the region
    is not reused while the array lives, and is once it is gone; the values stay
    right after other calls, and after the client is closed."""
    x = ramp(1 << 18)
    with myops_client.Client(shm_server.address, max_message_bytes=SMALL) as c:
        first = c.scale_shift(x, 2.0, 0.0)
        second = c.scale_shift(x, 3.0, 0.0)  # first holds its region: a second one
        assert mine(shm_server) == 2
        np.testing.assert_array_equal(first, 2 * x)
        del first, second
        for k in range(3):  # both regions are free again: reused, no third
            np.testing.assert_array_equal(c.scale_shift(x, float(k), 0.0), k * x)
        assert mine(shm_server) == 2
        kept = c.call("myops::scale_shift", x, 4.0, 1.0)
    np.testing.assert_array_equal(kept, 4 * x + 1)
    kept[0] = -1.0  # writable, like any result
    assert kept[0] == -1.0


def test_asyncio_calls_go_through_shared_memory(shm_server):
    x = ramp(1 << 18)

    async def main():
        async with aio.Client(shm_server.address, max_message_bytes=SMALL) as c:
            results = await asyncio.gather(
                *(c.scale_shift(x, float(k), 1.0) for k in range(8)))
            generic = await c.call("myops::scale_shift", x, 2.0, 0.0)
        return results, generic

    results, generic = asyncio.run(main())
    for k, y in enumerate(results):
        np.testing.assert_array_equal(y, k * x + 1)
    np.testing.assert_array_equal(generic, 2 * x)


def test_without_the_servers_consent_auto_goes_inline_and_on_fails(plain_server):
    x = ramp(1 << 16)  # 256 KiB
    with myops_client.Client(plain_server.address) as c:
        np.testing.assert_array_equal(c.scale_shift(x, 2.0, 1.0), 2 * x + 1)
    with myops_client.Client(plain_server.address, shared_memory="on") as c:
        with pytest.raises(myops_client.Unimplemented,
                           match="shared_memory is on.*--allow-shared-memory"):
            c.scale_shift(x, 2.0, 1.0)
    with myops_client.Client(plain_server.address, shared_memory="off") as c:
        np.testing.assert_array_equal(c.scale_shift(x, 2.0, 1.0), 2 * x + 1)


def test_off_sends_inline(shm_server):
    x = ramp(1 << 16)
    with myops_client.Client(shm_server.address, max_message_bytes=SMALL,
                             shared_memory="off") as c:
        with pytest.raises(myops_client.InvalidArgument, match="max_message_bytes"):
            c.scale_shift(x, 2.0, 1.0)


@pytest.mark.parametrize("value, error", [("yes", ValueError), (1, TypeError)])
def test_bad_modes_are_refused(value, error):
    with pytest.raises(error, match="shared_memory"):
        myops_client.Client("localhost:1", shared_memory=value)
