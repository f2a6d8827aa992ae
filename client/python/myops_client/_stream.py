"""Streams: pipelined calls of one operator on one CallStream RPC
(``Client.stream`` and ``myops_client.aio.Client.stream``).

    with client.stream("myops::scale_shift") as stream:
        for y in stream.map((x, 2.0, 1.0) for x in batches):   # in order
            ...
        first = stream.send(x, 2.0, 1.0)     # a request id; does not wait
        y = stream.receive()                 # the oldest request's result

Requests go out without waiting for results (up to ``depth`` in flight in
``map``); results come back in the order the requests were sent, whatever
order the server finished them in. A request the server fails raises its
``myops_client.Error`` from ``receive`` (``map``: from the iteration, or
yielded with ``return_exceptions=True``) and the stream goes on. Tensors of
any size travel, beyond gRPC's 2 GiB message limit too: a request larger than
the client's ``max_message_bytes`` is sent in chunks and a result too large
for one message comes in chunks (the server bounds both by its memory budget
and limits). The stream's ``timeout`` bounds the whole stream.

The native half (``_core.CallStream``) takes responses off the connection on
its own thread as they arrive, so sending never waits for this side to read
and one thread may both send and receive. This module orders the results and
converts them (``_ops.Overload.results``: arrays, torch tensors, timing).
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import threading
from typing import (TYPE_CHECKING, Any, AsyncIterable, AsyncIterator,
                    Iterable, Iterator, TypeVar)

from . import _ops, _values
from ._core import CallStream, Error, Internal

if TYPE_CHECKING:
    from types import TracebackType

__all__ = ["AsyncStream", "Stream"]

_Self = TypeVar("_Self", bound="Stream")
_ASelf = TypeVar("_ASelf", bound="AsyncStream")


def check_depth(depth: int) -> int:
    """``depth`` as the number of requests ``map`` keeps in flight."""
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise ValueError(f"depth must be an int >= 1, not {depth!r}")
    return depth


def request_arguments(item: Any) -> tuple[Any, ...]:
    """The positional arguments of one item of ``map``'s requests: a tuple
    is the arguments, anything else the one argument."""
    return item if isinstance(item, tuple) else (item,)


class Ordered:
    """The bookkeeping both streams share: requests sent and not yet
    returned (their ids in send order, with what converts their results),
    and responses that arrived ahead of an older request's."""

    __slots__ = ("bound", "waiting", "arrived")

    def __init__(self) -> None:
        self.bound: dict[int, tuple[_ops.Overload, _values.CallState]] = {}
        self.waiting: collections.deque[int] = collections.deque()
        self.arrived: dict[int, tuple[Any, BaseException | None]] = {}

    def sent(self, request_id: int, overload: _ops.Overload,
             state: _values.CallState) -> None:
        self.waiting.append(request_id)
        self.bound[request_id] = (overload, state)

    def oldest(self) -> int:
        if not self.waiting:
            raise ValueError("no request is waiting for its result "
                             "(send one first)")
        return self.waiting[0]

    def arrive(self, item: tuple[int, Any, BaseException | None]) -> None:
        request_id, sent, error = item
        self.arrived[request_id] = (sent, error)

    def take(self, request_id: int, context: _ops.Context) -> Any:
        """The oldest request's value (it has arrived); raises its error."""
        self.waiting.popleft()
        overload, state = self.bound.pop(request_id)
        sent, error = self.arrived.pop(request_id)
        if error is not None:
            raise error
        return overload.results(context, sent, state)


class Stream:
    """Pipelined calls of one operator on one CallStream RPC
    (``Client.stream(op)``); see the module's documentation. ``send`` and
    ``receive`` may run on different threads (one sender, one receiver at a
    time); use as a context manager, or call ``close()``."""

    def __init__(self, native: CallStream, catalog: _ops.Catalog, op: str,
                 context: _ops.Context) -> None:
        self._native = native
        self._catalog = catalog
        self._op = op
        self._context = context
        self._ordered = Ordered()
        self._send_lock = threading.Lock()
        self._receive_lock = threading.Lock()
        self._cancelled = False

    @property
    def op(self) -> str:
        """The operator every request calls."""
        return self._op

    def send(self, *args: Any, **kwargs: Any) -> int:
        """Sends one call of the stream's operator with these arguments
        (bound to its schema here first, as ``Client.call`` binds them:
        TypeError naming the argument) and returns its request id (1, 2, 3,
        ... in send order) without waiting for the result. Blocks only while
        the connection's flow control holds the request, or while a large
        one is written. Raises ``InvalidArgument`` for a request the client
        refuses (the stream goes on) and ``FailedPrecondition`` once the
        stream is closed for sending or has ended."""
        overload, wire, state = self._catalog.bind(self._op, args, kwargs)
        with self._send_lock:  # ids and the order of ``waiting`` agree
            request_id = self._native._send(overload.wire_name, wire)
            self._ordered.sent(request_id, overload, state)
        return request_id

    def receive(self) -> Any:
        """The result of the oldest request not yet received, waiting for it
        (a tuple for several results; ``(result, timing)`` with
        ``return_timing=True``). Raises that request's ``Error`` when the
        server failed it (the stream goes on), the stream's final error when
        it ended first (``Cancelled`` after ``cancel()``,
        ``DeadlineExceeded``, ``Unavailable``), and ValueError when no
        request is waiting."""
        value, error = self._receive_one()
        if error is not None:
            raise error
        return value

    def _receive_one(self) -> tuple[Any, BaseException | None]:
        """receive's result, or (None, the request's error); raises the
        stream's final error."""
        with self._receive_lock:
            with self._send_lock:
                request_id = self._ordered.oldest()
            while request_id not in self._ordered.arrived:
                item = self._native._receive()  # raises the final error
                if item is None:
                    raise Internal(f"the stream ended OK without answering "
                                   f"request {request_id}")
                self._ordered.arrive(item)
            with self._send_lock:
                try:
                    return self._ordered.take(request_id, self._context), None
                except Error as error:
                    return None, error

    def map(self, requests: Iterable[Any], *, depth: int = 8,
            return_exceptions: bool = False) -> Iterator[Any]:
        """Sends every item of ``requests`` (a tuple of positional
        arguments, or the one argument), keeping up to ``depth`` requests in
        flight, and yields their results in order, e.g.
        ``for y in stream.map((x, 2.0, 1.0) for x in batches)``. A request
        the server fails raises its ``Error`` here (the stream goes on), or,
        with ``return_exceptions=True``, is yielded as the exception. The
        stream's own end (``Cancelled``, ``DeadlineExceeded``, ...) always
        raises."""
        check_depth(depth)
        items = iter(requests)
        in_flight = 0
        exhausted = False
        while True:
            while not exhausted and in_flight < depth:
                try:
                    item = next(items)
                except StopIteration:
                    exhausted = True
                    break
                self.send(*request_arguments(item))
                in_flight += 1
            if in_flight == 0:
                return
            result, error = self._receive_one()
            in_flight -= 1
            if error is not None:
                if not return_exceptions:
                    raise error
                yield error
            else:
                yield result

    def close_send(self) -> None:
        """No more requests: the server ends the stream once it has answered
        those sent (their results can still be received). Idempotent."""
        self._native.close_send()

    def cancel(self) -> None:
        """Cancels the RPC: the server stops its work, results not received
        are lost, and ``receive`` raises ``Cancelled``. Idempotent."""
        self._cancelled = True
        self._native.cancel()

    def close(self) -> None:
        """``close_send``, then waits until the server has answered every
        request and ended the stream, discarding results not received.
        Raises the stream's final error when it failed (not after
        ``cancel``). Idempotent."""
        self._native.close_send()
        with self._receive_lock:
            try:
                while self._native._receive() is not None:
                    pass
            except Error:
                if not self._cancelled:
                    raise
            finally:
                with self._send_lock:
                    self._ordered = Ordered()

    def __enter__(self: _Self) -> _Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None,
                 exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        """Closes the stream; cancels it when the block raised."""
        if exc_type is not None:
            self.cancel()
        self.close()

    def __repr__(self) -> str:
        state = "ended" if self._native.ended else "open"
        return (f"<myops_client.Stream {self._op!r} {state}, "
                f"{len(self._ordered.waiting)} waiting>")


class AsyncStream:
    """The asyncio twin of ``Stream`` (``myops_client.aio.Client.stream``):
    ``await send(...)``, ``await receive()``, ``async for`` over ``map``.

    Responses arrive through the client's completion queue (no thread per
    await); sends run on one thread of the stream's own (a large request's
    copy and write, or flow control, never block the event loop). Used from
    one event loop, as its client. Cancelling a task that awaits
    ``receive`` leaves the stream going (the result stays for the next
    ``receive``); ``cancel()`` cancels the RPC. Use as ``async with``, or
    ``await close()``.
    """

    def __init__(self, native: CallStream, catalog: _ops.Catalog, op: str,
                 context: _ops.Context) -> None:
        self._native = native
        self._catalog = catalog
        self._op = op
        self._context = context
        self._ordered = Ordered()
        self._sender = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="myops-stream-send")
        self._send_lock = asyncio.Lock()
        self._changed: asyncio.Future[None] | None = None
        self._end: BaseException | None = None  # the final error
        self._ended = False
        self._cancelled = False

    @property
    def op(self) -> str:
        """The operator every request calls."""
        return self._op

    def _deliver(self, value: Any, error: BaseException | None) -> bool:
        """On the loop: one completion of this stream (a response, or its
        end: value None). True at the end."""
        if error is None and value is not None:
            self._ordered.arrive(value)
        else:
            self._ended = True
            self._end = error
            self._sender.shutdown(wait=False)
        if self._changed is not None and not self._changed.done():
            self._changed.set_result(None)
        return self._ended

    async def send(self, *args: Any, **kwargs: Any) -> int:
        """As ``Stream.send``, awaited: binds the arguments at once, then
        copies and writes the request on the stream's sending thread."""
        overload, wire, state = self._catalog.bind(self._op, args, kwargs)
        if self._ended:  # fails at once, as the native stream says
            self._native._send(overload.wire_name, wire)
        loop = asyncio.get_running_loop()
        async with self._send_lock:  # ids and the order of ``waiting`` agree
            request_id: int = await loop.run_in_executor(
                self._sender, self._native._send, overload.wire_name, wire)
            self._ordered.sent(request_id, overload, state)
        return request_id

    async def receive(self) -> Any:
        """As ``Stream.receive``, awaited."""
        value, error = await self._receive_one()
        if error is not None:
            raise error
        return value

    async def _receive_one(self) -> tuple[Any, BaseException | None]:
        request_id = self._ordered.oldest()
        while request_id not in self._ordered.arrived:
            if self._ended:
                if self._end is not None:
                    raise self._end
                raise Internal(f"the stream ended OK without answering "
                               f"request {request_id}")
            self._changed = asyncio.get_running_loop().create_future()
            await self._changed
        try:
            return self._ordered.take(request_id, self._context), None
        except Error as error:
            return None, error

    async def map(self, requests: Iterable[Any] | AsyncIterable[Any], *,
                  depth: int = 8, return_exceptions: bool = False
                  ) -> AsyncIterator[Any]:
        """As ``Stream.map``, for an iterable or an async iterable:
        ``async for y in stream.map(...)``."""
        check_depth(depth)
        items: Any = (requests.__aiter__() if hasattr(requests, "__aiter__")
                      else iter(requests))
        in_flight = 0
        exhausted = False
        while True:
            while not exhausted and in_flight < depth:
                try:
                    item = (await items.__anext__()
                            if hasattr(items, "__anext__") else next(items))
                except (StopIteration, StopAsyncIteration):
                    exhausted = True
                    break
                await self.send(*request_arguments(item))
                in_flight += 1
            if in_flight == 0:
                return
            result, error = await self._receive_one()
            in_flight -= 1
            if error is not None:
                if not return_exceptions:
                    raise error
                yield error
            else:
                yield result

    def close_send(self) -> None:
        """As ``Stream.close_send``."""
        self._native.close_send()

    def cancel(self) -> None:
        """As ``Stream.cancel``."""
        self._cancelled = True
        self._native.cancel()

    async def close(self) -> None:
        """As ``Stream.close``, awaited."""
        self._native.close_send()
        while not self._ended:
            self._changed = asyncio.get_running_loop().create_future()
            await self._changed
        self._ordered = Ordered()
        if self._end is not None and not self._cancelled:
            raise self._end

    async def __aenter__(self: _ASelf) -> _ASelf:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        """Closes the stream; cancels it when the block raised."""
        if exc_type is not None:
            self.cancel()
        await self.close()

    def __repr__(self) -> str:
        state = "ended" if self._ended else "open"
        return (f"<myops_client.aio.Stream {self._op!r} {state}, "
                f"{len(self._ordered.waiting)} waiting>")
