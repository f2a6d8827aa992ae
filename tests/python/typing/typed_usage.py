"""A user's script over every public call of myops_client and myops_client.aio, for
`mypy --strict` (test_typing.py). Never run: only its types are checked, so each line
states what a caller may rely on (return types, exception classes, option names)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

import myops_client
import myops_client.aio
from myops_client import Client, Error, Result, Timing


def use(target: str) -> float:
    x: npt.NDArray[np.float32] = np.ones((2, 3), dtype=np.float32)
    with Client(target, timeout=5.0, retries=1, retry_backoff=0.05, max_retry_backoff=1.0,
                max_message_bytes=1 << 20, token=None, load_balancing="pick_first",
                health_checking=True, channel_args={"grpc.primary_user_agent": "typed"}) as c:
        y: npt.NDArray[np.float32] = c.scale_shift(x, 2.0, 1.0)
        z, timing = c.scale_shift(x, 2.0, 1.0, device="cpu", timeout=1.0, return_timing=True)
        t: Timing = timing
        total: int = t.total_ns + t.decode_ns + t.queue_ns + t.compute_ns + t.encode_ns
        where: str = t.device + t.replica
        info: dict[str, object] = c.server_info(timeout=1.0)
        serving: bool = c.health() and c.health("myops.v1.Myops", timeout=1.0)
        names: list[str] = [op["name"] for op in c.list_operators()]
        out = c.call("myops::scale_shift", x, 2.0, beta=1.0)
        out2 = c.ops.myops.scale_shift(x, 2.0, 1.0)
        view = c.with_options(device="cpu", timeout=2.0)
        out3 = view.call("myops::scale_shift", x, alpha=2.0, beta=1.0)
        out4 = view.ops.myops.scale_shift(x, 2.0, 1.0)
        c.refresh_operators()
        target_name: str = c.target
        closed: bool = c.closed
        del out, out2, out3, out4, info, names, where, target_name, closed, serving
        result_type: type[Result] = myops_client.Result
        del result_type
    with Client(target) as c:
        with c.stream("myops::scale_shift", device="cpu", timeout=60.0,
                      return_timing=True) as stream:
            request_id: int = stream.send(x, 2.0, beta=1.0)
            first = stream.receive()
            for result in stream.map([(x, 2.0, 1.0), (x, 3.0, 0.0)], depth=4,
                                     return_exceptions=True):
                del result
            stream.close_send()
            op_name: str = stream.op
            stream_type: type[myops_client.Stream] = type(stream)
            del request_id, first, op_name, stream_type
        stream2 = c.stream("myops::scale_shift")
        stream2.cancel()
        stream2.close()
        timed, call_timing = c.call("myops::scale_shift", x, 2.0, 1.0, return_timing=True)
        del timed, call_timing
    try:
        Client(target).scale_shift(x, 1.0, 0.0)
    except myops_client.InvalidArgument as e:
        code: int = e.code
        del code
    except myops_client.Unavailable:
        pass
    except Error as e:
        details: str = e.details + e.code_name
        del details
    version: str = myops_client.__version__
    del version
    return float(y.sum() + z.sum()) + total


async def use_aio(target: str) -> float:
    """The asyncio client's calls, awaited (myops_client.aio)."""
    x: npt.NDArray[np.float32] = np.ones(4, dtype=np.float32)
    async with myops_client.aio.Client(target, timeout=5.0, retries=1) as c:
        y: npt.NDArray[np.float32] = await c.scale_shift(x, 2.0, 1.0)
        z, timing = await c.scale_shift(x, 2.0, 1.0, device="cpu", timeout=1.0,
                                        return_timing=True)
        total: int = timing.total_ns
        info: dict[str, object] = await c.server_info(timeout=1.0)
        serving: bool = await c.health() and await c.health("", timeout=1.0)
        names: list[str] = [op["name"] for op in await c.list_operators()]
        out = await c.call("myops::scale_shift", x, 2.0, beta=1.0)
        out2 = await c.ops.myops.scale_shift(x, 2.0, 1.0)
        view: myops_client.aio.CallView = c.with_options(device="cpu", return_timing=True)
        out3 = await view.call("myops::scale_shift", x, alpha=2.0, beta=1.0)
        await c.refresh_operators()
        c.timeout = 2.0
        closed: bool = c.closed
        async with await c.stream("myops::scale_shift", return_timing=True) as stream:
            request_id: int = await stream.send(x, 2.0, 1.0)
            first = await stream.receive()
            async for result in stream.map([(x, 2.0, 1.0)], depth=2):
                del result
            stream_type: type[myops_client.aio.Stream] = type(stream)
            del request_id, first, stream_type
        timed = await c.call("myops::scale_shift", x, 2.0, 1.0, return_timing=True)
        del out, out2, out3, info, names, serving, closed, timed
    await c.close()
    return float(y.sum() + z.sum()) + total
