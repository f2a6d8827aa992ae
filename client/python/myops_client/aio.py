"""myops_client.aio: the asyncio client, the blocking ``myops_client.Client``'s
calls as awaitables.

    import asyncio, numpy as np, myops_client.aio

    async def main() -> None:
        async with myops_client.aio.Client("localhost:50051") as client:
            x = np.arange(12, dtype=np.float32).reshape(3, 4)
            y = await client.scale_shift(x, 2.0, 1.0)
            ys = await asyncio.gather(*(client.scale_shift(x, 2.0, float(i))
                                        for i in range(100)))
            y = await client.ops.myops.scale_shift(x, 2.0, 1.0)
            keep = await client.call("torchvision::nms", boxes, scores, 0.5)
            async with await client.stream("myops::scale_shift") as stream:
                async for y in stream.map((x, 2.0, float(i)) for i in range(9)):
                    ...

    asyncio.run(main())

Each call starts the C++ client's asynchronous RPC and returns to the event
loop at once (no thread per call, no polling): x's bytes are copied into the
request before the call yields, so x may be changed or reused as soon as the
call has been awaited or wrapped in a task that has started. The gRPC thread
that completes the RPC does not take the GIL: it appends the C++ result to
the client's completion queue (``_core.CompletionQueue``) and, when the
queue was empty, writes its eventfd. The event loop watches that eventfd
(``loop.add_reader``); its reader drains every finished call in one pass and
resolves their futures, and conversion to arrays happens on the loop.
Cancelling the awaiting task cancels the RPC (gRPC TryCancel; the server
sees it cancelled). Failures raise the same ``myops_client.Error``
subclasses as the blocking client.

Threads and loops: a client is used from one event loop at a time, on that
loop's thread (nothing here is thread-safe). The reader is registered on
the loop of the first call and moves to the loop of a later call once the
first loop has closed (calls left in flight there are cancelled and
forgotten). The reader holds the client weakly: a client dropped without
close() is collected, and its reader removes itself at its next wake-up or
goes with its loop.
"""

from __future__ import annotations

import asyncio
import itertools
import weakref
from typing import TYPE_CHECKING, Any, Callable, Literal, TypeVar, overload

from . import _convert, _ops
from ._core import Client as _CoreClient
from ._core import CompletionQueue, PendingCall, Timing
from ._stream import AsyncStream as Stream

if TYPE_CHECKING:
    from types import TracebackType

__all__ = ["CallView", "Client", "Stream"]

_Array = TypeVar("_Array")
_Self = TypeVar("_Self", bound="Client")


class Client:
    """An asyncio client of a myops server or of its replicas (one gRPC
    channel). The constructor takes the options of ``myops_client.Client``
    (see there); ``timeout`` is the deadline of every call without its own.
    Use as ``async with``, or ``await close()``."""

    def __init__(
        self,
        target: str,
        *,
        timeout: float = 30.0,
        max_message_bytes: int = 1073741824,
        retries: int = 2,
        retry_backoff: float = 0.1,
        max_retry_backoff: float = 2.0,
        root_certificates: str | bytes | None = None,
        private_key: str | bytes | None = None,
        certificate_chain: str | bytes | None = None,
        channel_args: dict[str, int | str] | None = None,
        token: str | None = None,
        load_balancing: str = "round_robin",
        health_checking: bool = False,
        shared_memory: Literal["auto", "on", "off"] = "auto",
    ) -> None:
        self._core = _CoreClient(
            target, timeout=timeout, max_message_bytes=max_message_bytes,
            retries=retries, retry_backoff=retry_backoff,
            max_retry_backoff=max_retry_backoff,
            root_certificates=root_certificates, private_key=private_key,
            certificate_chain=certificate_chain, channel_args=channel_args,
            token=token, load_balancing=load_balancing,
            health_checking=health_checking, shared_memory=shared_memory)
        # Where the native calls finish, and the loop whose reader drains it
        # (None until the first call).
        self._queue = CompletionQueue()
        self._loop: asyncio.AbstractEventLoop | None = None
        # Calls in flight: their key -> (their future, their PendingCall);
        # close() cancels them. The future close() waits on until none is
        # left.
        self._keys = itertools.count()
        self._in_flight: dict[int, tuple[asyncio.Future[Any], PendingCall]] = {}
        self._drained: asyncio.Future[None] | None = None
        # Open streams by key: their responses and ends come through the
        # queue too. Weak: a stream dropped unclosed is cancelled (its end
        # then finds no one).
        self._streams: weakref.WeakValueDictionary[int, Stream] = (
            weakref.WeakValueDictionary())
        self._catalog: _ops.Catalog | None = None
        self._view = CallView(self, "", None, False, None)
        self._timed_view = CallView(self, "", None, True, None)

    # ---- the options ------------------------------------------------------

    @property
    def target(self) -> str:
        """The gRPC target (read-only)."""
        return self._core.target

    @property
    def timeout(self) -> float:
        """Deadline of every call without its own timeout, seconds (> 0)."""
        return self._core.timeout

    @timeout.setter
    def timeout(self, seconds: float) -> None:
        self._core.timeout = seconds

    @property
    def max_message_bytes(self) -> int | None:
        """Largest message sent or received (None when closed)."""
        return self._core.max_message_bytes

    @property
    def closed(self) -> bool:
        """Whether close() was called."""
        return self._core.closed

    def __repr__(self) -> str:
        return (f"<myops_client.aio.Client target={self.target!r} "
                f"timeout={self.timeout!r}{' closed' if self.closed else ''}>")

    def __reduce__(self) -> Any:
        raise TypeError("myops_client.aio.Client objects cannot be pickled "
                        "(they own a gRPC channel)")

    # ---- lifetime ---------------------------------------------------------

    async def __aenter__(self: _Self) -> _Self:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.close()

    async def close(self) -> None:
        """Closes the client: later calls raise ValueError; calls in flight
        are cancelled (their awaiters get ``myops_client.Cancelled`` unless
        they completed first), and close returns once every one has ended,
        so no completion runs after it. The completion queue's reader is
        removed and its eventfd closed. Idempotent."""
        self._core.close()
        loop = asyncio.get_running_loop()
        streams = list(self._streams.values())
        if (self._in_flight or streams) and loop is not self._loop:
            self._attach(loop)
        for _, pending in list(self._in_flight.values()):
            pending.cancel()
        for stream in streams:
            stream.cancel()
        for stream in streams:
            await stream.close()
        while self._in_flight:
            self._drained = loop.create_future()
            await self._drained
        self._drained = None
        if self._loop is not None:
            if not self._queue.closed and not self._loop.is_closed():
                self._loop.remove_reader(self._queue.fileno())
            self._loop = None
        self._queue.close()

    # ---- the calls --------------------------------------------------------

    def _attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """Has ``loop`` watch the completion queue (from the first call on;
        again after the previous loop closed)."""
        if self._loop is not None:
            if not self._loop.is_closed():
                raise RuntimeError(
                    "this myops_client.aio.Client is in use by another event "
                    "loop (use a client from one loop at a time)")
            # Calls left in flight on a closed loop: nobody awaits them.
            for _, pending in self._in_flight.values():
                pending.cancel()
            self._in_flight.clear()
        loop.add_reader(self._queue.fileno(), _on_completions,
                        weakref.ref(self), self._queue, loop)
        self._loop = loop

    async def _start(self, start: Callable[..., PendingCall],
                     *args: Any) -> Any:
        """Starts a native asynchronous call (``_core.Client._start_*``) and
        awaits its completion; cancelling the awaiting task cancels it."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            self._attach(loop)
        future: asyncio.Future[Any] = loop.create_future()
        key = next(self._keys)
        pending = start(self._queue, key, *args)
        # Nothing is drained before this line: draining runs on this loop.
        self._in_flight[key] = (future, pending)
        try:
            return await future
        except asyncio.CancelledError:
            pending.cancel()
            raise

    def _settle(self, outcomes: list[tuple[int, Any, BaseException | None]]
                ) -> None:
        """On the loop: resolves the futures of these finished calls."""
        in_flight = self._in_flight
        for key, value, error in outcomes:
            stream = self._streams.get(key)
            if stream is not None:
                if stream._deliver(value, error):
                    del self._streams[key]
                continue
            entry = in_flight.pop(key, None)
            if entry is None:  # forgotten (its loop closed)
                continue
            future = entry[0]
            if future.done():  # the awaiting task was cancelled
                continue
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(value)
        if (not in_flight and self._drained is not None
                and not self._drained.done()):
            self._drained.set_result(None)

    @overload
    async def scale_shift(self, x: _Array, alpha: float, beta: float, *,
                          device: str = ..., timeout: float | None = ...,
                          return_timing: Literal[False] = ...) -> _Array: ...

    @overload
    async def scale_shift(self, x: _Array, alpha: float, beta: float, *,
                          device: str = ..., timeout: float | None = ...,
                          return_timing: Literal[True]
                          ) -> tuple[_Array, Timing]: ...

    async def scale_shift(self, x: Any, alpha: float, beta: float, *,
                          device: str = "", timeout: float | None = None,
                          return_timing: bool = False) -> Any:
        """``alpha * x + beta`` on the server: as
        ``myops_client.Client.scale_shift``, awaited."""
        code, shape, data, output = _convert.encode(x)
        result = await self._start(self._core._start_scale_shift, code, shape,
                                   data, alpha, beta, device, timeout)
        y = _convert.decode(result, shape, output)
        if return_timing:
            return y, result.timing
        return y

    async def server_info(self, *, timeout: float | None = None
                          ) -> dict[str, Any]:
        """The server's versions, devices, operators, limits and workers."""
        info: dict[str, Any] = await self._start(
            self._core._start_server_info, timeout)
        return info

    async def list_operators(self, *, timeout: float | None = None
                             ) -> list[dict[str, Any]]:
        """The operators the server lists, as
        ``myops_client.Client.list_operators``."""
        listing: list[dict[str, Any]] = await self._start(
            self._core._start_list_operators, timeout)
        return listing

    async def health(self, service: str = "", *,
                     timeout: float | None = None) -> bool:
        """True when the server (or ``service``) is SERVING."""
        serving: bool = await self._start(self._core._start_health, service,
                                          timeout)
        return serving

    # ---- the operator table -----------------------------------------------

    async def call(self, op: str, /, *args: Any, return_timing: bool = False,
                   **kwargs: Any) -> Any:
        """Runs the served operator ``op``: as ``myops_client.Client.call``,
        awaited (the first call lists the server's operators);
        ``return_timing=True`` returns ``(result, timing)``."""
        view = self._timed_view if return_timing else self._view
        return await view.call(op, *args, **kwargs)

    async def stream(self, op: str, *, device: str = "",
                     timeout: float | None = None,
                     return_timing: bool = False,
                     as_torch: bool | None = None) -> Stream:
        """Opens a stream of pipelined calls of ``op``: as
        ``myops_client.Client.stream``, its calls awaited::

            async with await client.stream("myops::scale_shift") as stream:
                async for y in stream.map((x, 2.0, 1.0) for x in batches):
                    ...
        """
        _ops.check_device(device)
        catalog = await self._operator_catalog()
        catalog.resolve(op)
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            self._attach(loop)
        key = next(self._keys)
        native = self._core._open_stream(device, timeout, self._queue, key)
        context = _ops.Context(_stream_invoke, bool(return_timing),
                               None if as_torch is None else bool(as_torch))
        stream = Stream(native, catalog, op, context)
        self._streams[key] = stream
        return stream

    @property
    def ops(self) -> _ops.Ops | RemoteName:
        """The server's operators as ``torch.ops`` has them: ``await
        client.ops.myops.scale_shift(x, 2.0, 1.0)``. Once the listing is
        loaded (by the first call, or ``await refresh_operators()``) this is
        the tree of ``myops_client.Client.ops``, with schemas as docstrings
        and ``dir()``, whose calls return coroutines; before, names resolve
        when the call is awaited (ValueError for an operator the server does
        not list)."""
        return self._view.ops

    def with_options(self, *, device: str = "", timeout: float | None = None,
                     return_timing: bool = False,
                     as_torch: bool | None = None) -> CallView:
        """``call`` and ``ops`` with these options, as
        ``myops_client.Client.with_options``."""
        return CallView(self, device, timeout, return_timing, as_torch)

    async def refresh_operators(self) -> None:
        """Lists the server's operators again (for ``call`` and ``ops``)."""
        self._catalog = _ops.Catalog(await self.list_operators())
        self._view.reset()
        self._timed_view.reset()

    async def _operator_catalog(self) -> _ops.Catalog:
        if self._catalog is None:
            self._catalog = _ops.Catalog(await self.list_operators())
        return self._catalog


def _stream_invoke(op: str, arguments: list[tuple[str, int, Any]]) -> Any:
    """The invoke function of a stream's context, which sends by itself."""
    raise AssertionError("a stream's calls are sent by Stream.send")


def _on_completions(client_ref: weakref.ref[Client], queue: CompletionQueue,
                    loop: asyncio.AbstractEventLoop) -> None:
    """The reader of a client's completion queue: its eventfd is readable,
    so calls have finished (one wake-up for all that finished since the
    last drain)."""
    outcomes = queue.drain()
    client = client_ref()
    if client is not None:
        client._settle(outcomes)
    elif not queue.closed:  # the client was dropped without close()
        loop.remove_reader(queue.fileno())
        queue.close()


class CallView:
    """``call`` and ``ops`` of an asyncio client with a device, timeout,
    timing and result type choice (``Client.with_options``)."""

    __slots__ = ("_client", "_context", "_ops")

    def __init__(self, client: Client, device: str, timeout: float | None,
                 return_timing: bool, as_torch: bool | None) -> None:
        _ops.check_device(device)

        def invoke(op: str, arguments: list[tuple[str, int, Any]]) -> Any:
            return client._start(client._core._start_call, op, arguments,
                                 device, timeout)

        if as_torch is not None:
            as_torch = bool(as_torch)
            if as_torch:
                import torch  # noqa: F401  (results are made with it)
        self._client = client
        self._context = _ops.Context(invoke, bool(return_timing), as_torch,
                                     asynchronous=True)
        self._ops: _ops.Ops | None = None

    async def call(self, op: str, /, *args: Any, **kwargs: Any) -> Any:
        """As ``Client.call``, with this view's options."""
        catalog = await self._client._operator_catalog()
        return await catalog.call(self._context, op, args, kwargs)

    @property
    def ops(self) -> _ops.Ops | RemoteName:
        """As ``Client.ops``, with this view's options."""
        catalog = self._client._catalog
        if catalog is None:
            return RemoteName(self, "")
        if self._ops is None or self._ops._catalog is not catalog:
            self._ops = _ops.Ops(catalog, self._context)
        return self._ops

    def reset(self) -> None:
        self._ops = None


class RemoteName:
    """A namespace, operator or overload of ``client.ops`` named before the
    server's listing is loaded: ``ops.myops``, ``ops.myops.scale_shift``,
    ``ops.myops.scale_shift.out``. Calling an operator or overload awaits
    the listing, then calls it as ``Client.call`` would."""

    __slots__ = ("_view", "_path")

    def __init__(self, view: CallView, path: str) -> None:
        self._view = view
        self._path = path  # "", "ns", "ns::op" or "ns::op.overload"

    def __getattr__(self, name: str) -> RemoteName:
        if name.startswith("__") or "." in self._path:
            raise AttributeError(name)
        path = self._path
        return RemoteName(self._view, name if not path else
                          f"{path}.{name}" if "::" in path else
                          f"{path}::{name}")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if "::" not in self._path:
            raise TypeError(f"the operator namespace {self._path!r} is not "
                            f"callable; call one of its operators")
        return self._view.call(self._path, *args, **kwargs)

    def __repr__(self) -> str:
        return f"<remote operator {self._path or 'tree'} (not listed yet)>"
