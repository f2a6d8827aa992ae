"""myops_client: the Python client of myops-server, PyTorch operators as a service.

    import numpy as np, myops_client
    with myops_client.Client("localhost:50051", timeout=5.0) as client:
        x = np.arange(12, dtype=np.float32).reshape(3, 4)
        y = client.scale_shift(x, 2.0, 1.0)
        y, timing = client.scale_shift(x, 2.0, 1.0, return_timing=True)
        y = client.ops.myops.scale_shift(x, 2.0, 1.0)   # any served operator
        keep = client.call("torchvision::nms", boxes, scores, 0.5)
        keep, timing = client.call("torchvision::nms", boxes, scores, 0.5,
                                   return_timing=True)
        with client.stream("myops::scale_shift") as stream:  # pipelined
            ys = list(stream.map((x, 2.0, float(i)) for i in range(100)))

numpy arrays (float16/32/64, int8/16/32/64, uint8, bool; bfloat16 with
ml_dtypes) come back as numpy arrays, CPU torch tensors as torch tensors, of
the input's shape and dtype. scale_shift itself computes in floating point
only: the server answers integer and bool inputs with ``InvalidArgument``.
One ``Client`` is meant to be shared by all threads; calls release the GIL.
Failures raise ``Error`` subclasses named after the gRPC status code
(``Unavailable``, ``DeadlineExceeded``, ``InvalidArgument``, ...).

The work is done by the native core ``myops_client._core`` (a CPython
extension around the C++ client); this package adds array conversion
(``_convert``), the context manager, ``return_timing`` and the operator
table: ``call`` and ``ops`` (``_ops``, ``_values``), and streams
(``_stream``).
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

from . import _convert, _ops, _stream
from ._core import (
    Aborted,
    AlreadyExists,
    Cancelled,
    DataLoss,
    DeadlineExceeded,
    Error,
    FailedPrecondition,
    Internal,
    InvalidArgument,
    NotFound,
    OutOfRange,
    PermissionDenied,
    ResourceExhausted,
    Result,
    Timing,
    Unauthenticated,
    Unavailable,
    Unimplemented,
    Unknown,
)
from ._core import Client as _CoreClient
from ._stream import Stream

if TYPE_CHECKING:
    from types import TracebackType

__version__ = "0.1.0"

__all__ = [
    "Aborted", "AlreadyExists", "Cancelled", "Client", "DataLoss",
    "DeadlineExceeded", "Error", "FailedPrecondition", "Internal",
    "InvalidArgument", "NotFound", "OutOfRange", "PermissionDenied",
    "ResourceExhausted", "Result", "Timing", "Unauthenticated",
    "CallView", "Stream",
    "Unavailable", "Unimplemented", "Unknown", "__version__",
]

_Array = TypeVar("_Array")
_Self = TypeVar("_Self", bound="Client")


class Client(_CoreClient):
    """A client of a myops server or of its replicas (one gRPC channel);
    thread-safe.

    Client(target, *, timeout=30.0, max_message_bytes=2**30, retries=2,
           retry_backoff=0.1, max_retry_backoff=2.0, root_certificates=None,
           private_key=None, certificate_chain=None, channel_args=None,
           token=None, load_balancing="round_robin", health_checking=False,
           shared_memory="auto")

    A ``target`` that resolves to many addresses
    (``"dns:///myops-headless.NS.svc:50051"``,
    ``"ipv4:10.0.0.1:50051,10.0.0.2:50051"``) is balanced call by call
    (``load_balancing="round_robin"``; ``"pick_first"`` sticks to one
    address). ``health_checking=True`` (for many replicas, e.g. a headless
    Service) sends no new calls to a replica whose health is not SERVING (one
    draining after SIGTERM). ``timing.replica`` names the replica that served
    a call.

    ``timeout`` (seconds) is the deadline of every call that does not pass
    its own; UNAVAILABLE is retried ``retries`` times (0 to 999) with
    jittered exponential backoff. TLS: PEM ``root_certificates`` (and, for
    mutual TLS, ``certificate_chain`` + ``private_key``). ``channel_args``:
    extra gRPC channel arguments, ``{"grpc.keepalive_time_ms": 10000}``.
    ``token``: the server's bearer token (``--auth-token-file``), sent as
    ``authorization: Bearer <token>`` on every call.
    ``shared_memory``: with a server on this host started with
    ``--allow-shared-memory``, arrays of 64 KiB or more travel through
    shared memory regions the client registers and reuses, not the socket
    (``"auto"``: when the target is this host and the server accepts them,
    else silently inline; ``"on"``: every array, and a call fails when the
    server cannot use them; ``"off"``: never).
    Use as a context manager, or call ``close()``.

    ``scale_shift`` is the typed call of ``myops::scale_shift``; ``call``
    and ``ops`` (a remote mirror of ``torch.ops``) call any operator the
    server serves (``list_operators()``).
    """

    __slots__ = ()

    def __enter__(self: _Self) -> _Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None,
                 exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def __reduce__(self) -> Any:
        raise TypeError(f"{type(self).__name__} objects cannot be pickled "
                        f"(they own a gRPC channel); pickle the target and "
                        f"options and create a new Client instead")

    @overload
    def scale_shift(self, x: _Array, alpha: float, beta: float, *,
                    device: str = ..., timeout: float | None = ...,
                    return_timing: Literal[False] = ...) -> _Array: ...

    @overload
    def scale_shift(self, x: _Array, alpha: float, beta: float, *,
                    device: str = ..., timeout: float | None = ...,
                    return_timing: Literal[True]) -> tuple[_Array, Timing]:
        ...

    def scale_shift(self, x: Any, alpha: float, beta: float, *,
                    device: str = "", timeout: float | None = None,
                    return_timing: bool = False) -> Any:
        """``alpha * x + beta``, computed by the server in x's dtype.

        ``x``: a numpy array (float16, float32, float64; bfloat16 from
        ml_dtypes; the integer and bool dtypes travel too, and the server
        rejects them) of any shape and layout, or a CPU torch tensor. Returns a
        new array (tensor for a tensor) of x's shape and dtype; ``x`` is not
        modified. ``device``: "" (server's choice), "cpu", "cuda", "cuda:N".
        ``timeout``: seconds, overriding the client's. With
        ``return_timing=True`` returns ``(y, timing)``.

        Raises TypeError for dtypes the wire cannot carry (complex, object,
        ...), and ``Error`` subclasses for failed calls (e.g.
        ``FailedPrecondition`` for a device the server does not serve,
        ``InvalidArgument`` for a tensor over its limits or an integer
        dtype).
        """
        code, shape, data, output = _convert.encode(x)
        result = self._scale_shift(code, shape, data, alpha, beta, device,
                                   timeout)
        y = _convert.decode(result, shape, output)
        if return_timing:
            return y, result.timing
        return y

    # ---- the operator table ------------------------------------------------

    def call(self, op: str, /, *args: Any, return_timing: bool = False,
             **kwargs: Any) -> Any:
        """Runs the served operator ``op`` on the server, e.g.
        ``client.call("torchvision::nms", boxes, scores, 0.5)``; with
        ``return_timing=True`` returns ``(result, timing)``, the server's
        ``Timing`` (stages, device, replica).

        ``op`` is "namespace::name" (the overload is the first served one
        whose schema accepts the arguments, as ``torch.ops`` chooses),
        "namespace::name.overload", or the NAME of an exported program the
        server serves (``--program NAME=PATH``). Arguments are those of the schema
        (``client.ops.<ns>.<name>.__doc__``), by position or by name, and
        are checked here first: TypeError naming the argument when they do
        not fit. Tensors: numpy arrays or CPU torch tensors; results are
        torch tensors when a tensor argument was one, else numpy arrays; one
        result as itself, several as a tuple. ValueError when the server
        does not list ``op``. Device, timeout and timing for ``ops`` too:
        ``with_options``.
        """
        context = (self._timing_context() if return_timing
                   else self._default_context())
        return self._operator_catalog().call(context, op, args, kwargs)

    def stream(self, op: str, *, device: str = "",
               timeout: float | None = None, return_timing: bool = False,
               as_torch: bool | None = None) -> Stream:
        """Opens a stream of pipelined calls of ``op`` (named as for
        ``call``) on one CallStream RPC: ``send`` requests without waiting,
        ``receive`` results in send order, or ``map`` an iterable of
        argument tuples with ``depth`` requests in flight; tensors of any
        size (chunked beyond the message limit). ``timeout`` (seconds, None:
        the client's) bounds the whole stream; ``device``,
        ``return_timing`` and ``as_torch`` as ``with_options``::

            with client.stream("myops::scale_shift") as stream:
                for y in stream.map(((x, 2.0, 1.0) for x in batches), depth=8):
                    ...

        ValueError when the server does not list ``op``.
        """
        _ops.check_device(device)
        catalog = self._operator_catalog()
        catalog.resolve(op)
        context = _ops.Context(_no_invoke, bool(return_timing),
                               None if as_torch is None else bool(as_torch))
        return Stream(self._open_stream(device, timeout), catalog, op,
                      context)

    @property
    def ops(self) -> _ops.Ops:
        """The server's operators as ``torch.ops`` has them:
        ``client.ops.myops.scale_shift(x, 2.0, 1.0)``. Built from
        ``list_operators()`` on first use (one RPC), then cached;
        ``refresh_operators()`` lists again. Each operator's docstring is
        its schema; calls behave as ``call``. The tree refers to the client
        weakly: keep the client."""
        ops = self.__dict__.get("_ops")
        if ops is None:
            ops = _ops.Ops(self._operator_catalog(), self._default_context())
            self.__dict__["_ops"] = ops
        return ops

    def with_options(self, *, device: str = "", timeout: float | None = None,
                     return_timing: bool = False,
                     as_torch: bool | None = None) -> CallView:
        """``call`` and ``ops`` with these options: ``device`` ("",
        "cpu", "cuda", "cuda:N"), ``timeout`` (seconds, None: the
        client's), ``return_timing`` (calls return ``(result, timing)``)
        and ``as_torch`` (result tensors as torch tensors when True, numpy
        arrays when False; None: torch when a tensor argument was one), e.g.
        ``client.with_options(device="cuda").ops.myops.scale_shift(x, 2.0,
        1.0)``."""
        return CallView(self, device, timeout, return_timing, as_torch)

    def refresh_operators(self) -> None:
        """Lists the server's operators again (for ``call`` and ``ops``)."""
        catalog = _ops.Catalog(self.list_operators())
        self.__dict__["_op_catalog"] = catalog
        self.__dict__.pop("_ops", None)

    def _operator_catalog(self) -> _ops.Catalog:
        catalog = self.__dict__.get("_op_catalog")
        if catalog is None:
            catalog = _ops.Catalog(self.list_operators())
            self.__dict__["_op_catalog"] = catalog
        return catalog

    def _timing_context(self) -> _ops.Context:
        context = self.__dict__.get("_timed")
        if context is None:
            context = _ops.Context(_weak_invoke(self), return_timing=True)
            self.__dict__["_timed"] = context
        return context

    def _default_context(self) -> _ops.Context:
        context = self.__dict__.get("_context")
        if context is None:
            context = _ops.Context(_weak_invoke(self))
            self.__dict__["_context"] = context
        return context


def _weak_invoke(client: Client) -> _ops.Invoke:
    """The invoke function of ``client.ops``: it refers to the client weakly,
    so caching the tree in the client makes no reference cycle."""
    ref = weakref.ref(client)

    def invoke(op: str, arguments: list[tuple[str, int, Any]]) -> Any:
        owner = ref()
        if owner is None:
            raise ValueError("the Client of these operators no longer exists; "
                             "keep a reference to the Client while using "
                             "its ops")
        return owner._call(op, arguments, "", None)

    return invoke


def _no_invoke(op: str, arguments: list[tuple[str, int, Any]]) -> Any:
    """The invoke function of a stream's context, which sends by itself."""
    raise AssertionError("a stream's calls are sent by Stream.send")


class CallView:
    """``call`` and ``ops`` of a client with a device, timeout, timing and
    result type choice (``Client.with_options``). Holds the client."""

    __slots__ = ("_client", "_context", "_ops")

    def __init__(self, client: Client, device: str, timeout: float | None,
                 return_timing: bool, as_torch: bool | None) -> None:
        _ops.check_device(device)

        def invoke(op: str, arguments: list[tuple[str, int, Any]]) -> Any:
            return client._call(op, arguments, device, timeout)

        self._client = client
        if as_torch is not None:
            as_torch = bool(as_torch)
            if as_torch:
                import torch  # noqa: F401  (results are made with it)
        self._context = _ops.Context(invoke, bool(return_timing), as_torch)
        self._ops: _ops.Ops | None = None

    def call(self, op: str, /, *args: Any, **kwargs: Any) -> Any:
        """As ``Client.call``, with this view's options."""
        return self._client._operator_catalog().call(self._context, op, args,
                                                     kwargs)

    @property
    def ops(self) -> _ops.Ops:
        """As ``Client.ops``, with this view's options."""
        if self._ops is None:
            self._ops = _ops.Ops(self._client._operator_catalog(),
                                 self._context)
        return self._ops
