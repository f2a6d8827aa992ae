"""Conversion between user arrays and the native core's generic form.

The core (``myops_client._core``) takes a wire dtype code, a shape tuple and a
C-contiguous buffer, and returns a ``Result`` that owns the output bytes.
This module turns numpy arrays (float16/32/64, int8/16/32/64, uint8, bool, and
bfloat16 through ``ml_dtypes``) and CPU torch tensors of the same dtypes into
that form, copying only when the input is not C-contiguous (or not in native
byte order), and wraps results back without copying. torch and ml_dtypes are
never imported here: an input can only be of their types if the user
imported them already.

The dtypes come from one table, ``_core.DTYPES`` (the C++ table of
myops/common/dtype.h, which the server and every client share): ``DTYPES``
below is that table, and every mapping here is derived from it.
"""

from __future__ import annotations

import sys
from typing import Any, Callable, NamedTuple, Optional, Union

import numpy as np

from ._core import DTYPES as _CORE_DTYPES


class DTypeInfo(NamedTuple):
    """One dtype: wire code (myops.v1.DType), name, bytes per element,
    numpy's type string (None for bfloat16) and whether it is floating."""
    code: int
    name: str
    itemsize: int
    numpy_str: Optional[str]
    is_floating: bool


DTYPES: tuple[DTypeInfo, ...] = tuple(DTypeInfo(*d) for d in _CORE_DTYPES)
BY_NAME: dict[str, DTypeInfo] = {d.name: d for d in DTYPES}
BY_CODE: dict[int, DTypeInfo] = {d.code: d for d in DTYPES}
BFLOAT16 = BY_NAME["bfloat16"].code

_NUMPY_CODES: dict[np.dtype, int] = {
    np.dtype(d.numpy_str): d.code for d in DTYPES if d.numpy_str is not None}
_SUPPORTED = ", ".join(
    d.name if d.numpy_str is not None else f"{d.name} (ml_dtypes or torch)"
    for d in DTYPES)

# How to turn a Result into the output: a numpy dtype (frombuffer + reshape)
# or a function of (result, shape).
Output = Union[np.dtype, Callable[[Any, tuple[int, ...]], Any]]


def _unsupported(dtype: object, what: str) -> TypeError:
    return TypeError(
        f"{what}: unsupported dtype {dtype}; supported: {_SUPPORTED}")


def encode(x: Any, what: str = "scale_shift"
           ) -> tuple[int, tuple[int, ...], Any, Output]:
    """(dtype code, shape, C-contiguous buffer, output) for input ``x``.

    ``x`` itself is never modified; the buffer is ``x`` when ``x`` is already
    a C-contiguous native-endian numpy array, else a contiguous copy.
    ``what`` names the input in error messages.
    """
    if type(x) is not np.ndarray:
        torch = sys.modules.get("torch")
        if torch is not None and isinstance(x, torch.Tensor):
            return _encode_torch(x, torch, what)
        x = np.asarray(x)
    dtype = x.dtype
    code = _NUMPY_CODES.get(dtype)
    if code is None:
        return _encode_other_numpy(x, what)
    if not x.flags.c_contiguous:
        x = np.ascontiguousarray(x)
    return code, x.shape, x, dtype


def decode(result: Any, shape: tuple[int, ...], output: Output) -> Any:
    """The output array (or tensor) viewing ``result``'s bytes (no copy)."""
    if isinstance(output, np.dtype):
        return np.frombuffer(result, output).reshape(shape)
    return output(result, shape)


def _encode_other_numpy(x: np.ndarray, what: str
                        ) -> tuple[int, tuple[int, ...], Any, Output]:
    """bfloat16 (ml_dtypes) and non-native byte orders; TypeError otherwise."""
    dtype = x.dtype
    ml_dtypes = sys.modules.get("ml_dtypes")
    if ml_dtypes is not None and dtype == ml_dtypes.bfloat16:
        data = np.ascontiguousarray(x).view(np.uint16)
        return BFLOAT16, x.shape, data, dtype
    if not dtype.isnative:
        native = dtype.newbyteorder("=")
        code = _NUMPY_CODES.get(native)
        if code is not None:
            def to_input_order(result: Any, shape: tuple[int, ...]) -> np.ndarray:
                return np.frombuffer(result, native).reshape(shape).astype(
                    dtype)
            return code, x.shape, x.astype(native, order="C"), to_input_order
    raise _unsupported(dtype, what)


_TORCH_CODES: dict[Any, int] = {}


def _encode_torch(x: Any, torch: Any, what: str
                  ) -> tuple[int, tuple[int, ...], Any, Output]:
    """A CPU tensor as numpy (zero-copy when contiguous); torch comes back."""
    if not _TORCH_CODES:  # torch names its dtypes as the table does.
        _TORCH_CODES.update({getattr(torch, d.name): d.code for d in DTYPES})
    code = _TORCH_CODES.get(x.dtype)
    if code is None:
        raise _unsupported(x.dtype, what)
    if x.layout != torch.strided:
        raise TypeError(f"{what}: expected a dense (strided) tensor, "
                        f"got layout {x.layout}")
    if x.device.type != "cpu":
        raise ValueError(
            f"{what}: expected a CPU tensor, got one on {x.device}; "
            f"move it with .cpu() (the server's device is chosen with "
            f"device=...)")
    t = x.detach().resolve_neg().contiguous()
    torch_dtype = x.dtype
    if code == BFLOAT16:
        data = t.view(torch.int16).numpy()
        wire = np.dtype(np.int16)
    else:
        data = t.numpy()
        wire = data.dtype

    def to_tensor(result: Any, shape: tuple[int, ...]) -> Any:
        out = torch.from_numpy(np.frombuffer(result, wire).reshape(shape))
        return out.view(torch_dtype) if code == BFLOAT16 else out

    return code, tuple(t.shape), data, to_tensor


# ---- dtypes as values and results by their dtype code (the operator table) --

def dtype_code(value: Any) -> int | None:
    """The wire code of a dtype given as a ``torch.dtype``, a numpy dtype or
    a numpy scalar type (``np.float32``); None for anything else, and for
    dtypes the wire does not carry."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.dtype):
        info = BY_NAME.get(str(value).removeprefix("torch."))
    elif isinstance(value, np.dtype) or (
            isinstance(value, type) and issubclass(value, np.generic)):
        info = BY_NAME.get(np.dtype(value).name)
    else:
        return None
    return None if info is None else info.code


def dtype_name(code: int) -> str:
    """"float32" for float32's code, ...; "dtype code N" for unknown codes."""
    info = BY_CODE.get(code)
    return f"dtype code {code}" if info is None else info.name


def from_result(result: Any, as_torch: bool) -> Any:
    """A numpy array (a torch tensor when ``as_torch``) of ``result``'s dtype
    and shape, wrapping its bytes without a copy."""
    code, shape = result.dtype, tuple(result.shape)
    info = BY_CODE.get(code)
    if info is None:
        raise TypeError(f"the server returned a tensor of {dtype_name(code)}, "
                        f"which this client does not know")
    if info.numpy_str is None:  # bfloat16
        if as_torch:
            torch = sys.modules["torch"]
            raw = np.frombuffer(result, np.int16).reshape(shape)
            return torch.from_numpy(raw).view(getattr(torch, info.name))
        ml_dtypes = sys.modules.get("ml_dtypes")
        if ml_dtypes is None:
            try:
                import ml_dtypes
            except ImportError:
                raise TypeError(
                    f"the server returned a {info.name} tensor: numpy needs "
                    f"ml_dtypes for it (pip install ml_dtypes), or pass "
                    f"torch tensors to get torch tensors back") from None
        return np.frombuffer(result, getattr(ml_dtypes, info.name)).reshape(
            shape)
    array = np.frombuffer(result, np.dtype(info.numpy_str)).reshape(shape)
    if as_torch:
        return sys.modules["torch"].from_numpy(array)
    return array
