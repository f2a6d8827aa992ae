"""myops_client: the Python client of myops-server (y = alpha * x + beta).

    import numpy as np, myops_client
    with myops_client.Client("localhost:50051", timeout=5.0) as client:
        x = np.arange(12, dtype=np.float32).reshape(3, 4)
        y = client.scale_shift(x, 2.0, 1.0)
        y, timing = client.scale_shift(x, 2.0, 1.0, return_timing=True)

numpy arrays (float16/32/64, int8/16/32/64, uint8, bool; bfloat16 with
ml_dtypes) come back as numpy arrays, CPU torch tensors as torch tensors, of
the input's shape and dtype. scale_shift itself computes in floating point
only: the server answers integer and bool inputs with ``InvalidArgument``.
One ``Client`` is meant to be shared by all threads; calls release the GIL.
Failures raise ``Error`` subclasses named after the gRPC status code
(``Unavailable``, ``DeadlineExceeded``, ``InvalidArgument``, ...).

The work is done by the native core ``myops_client._core`` (a CPython
extension around the C++ client); this package adds array conversion
(``_convert``), the context manager and ``return_timing``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

from . import _convert
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

if TYPE_CHECKING:
    from types import TracebackType

__version__ = "0.1.0"

__all__ = [
    "Aborted", "AlreadyExists", "Cancelled", "Client", "DataLoss",
    "DeadlineExceeded", "Error", "FailedPrecondition", "Internal",
    "InvalidArgument", "NotFound", "OutOfRange", "PermissionDenied",
    "ResourceExhausted", "Result", "Timing", "Unauthenticated",
    "Unavailable", "Unimplemented", "Unknown", "__version__",
]

_Array = TypeVar("_Array")
_Self = TypeVar("_Self", bound="Client")


class Client(_CoreClient):
    """A client of one myops server (one gRPC channel); thread-safe.

    Client(target, *, timeout=30.0, max_message_bytes=2**30, retries=2,
           retry_backoff=0.1, max_retry_backoff=2.0, root_certificates=None,
           private_key=None, certificate_chain=None, channel_args=None,
           token=None)

    ``timeout`` (seconds) is the deadline of every call that does not pass
    its own; UNAVAILABLE is retried ``retries`` times (0 to 999) with
    jittered exponential backoff. TLS: PEM ``root_certificates`` (and, for
    mutual TLS, ``certificate_chain`` + ``private_key``). ``channel_args``:
    extra gRPC channel arguments, ``{"grpc.keepalive_time_ms": 10000}``.
    ``token``: the server's bearer token (``--auth-token-file``), sent as
    ``authorization: Bearer <token>`` on every call.
    Use as a context manager, or call ``close()``.
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
