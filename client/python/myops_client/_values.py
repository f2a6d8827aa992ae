"""Argument and result values of generic calls (``Client.call``, ``Client.ops``).

One argument of a served operator becomes the wire form the native core sends
as a ``myops.v1.Value``: a ``(field, payload)`` pair where ``field`` is the
number of the Value field that is set (``TENSOR`` .. ``NONE``) and payload is

- TENSOR: ``(dtype_code, shape, buffer)`` (see ``_convert.encode``),
- INT, FLOAT, BOOL, STRING: an ``int``, ``float``, ``bool``, ``str``,
- INT_LIST, FLOAT_LIST: a tuple of ``int`` / ``float``,
- TENSOR_LIST: a list of ``(dtype_code, shape, buffer)``,
- SCALAR_TYPE: a dtype code, NONE: ``None``.

Which Python values an argument accepts follows its schema type as a local
``torch.ops`` call does (an ``int`` for a ``float``, a single int for an
``int[2]``, a bool for an ``int``); a value of another type raises TypeError
naming the operator, the argument and the type expected. Results come back
as ``(field, payload)`` pairs too, tensors as ``_core.Result`` objects, and
become numpy arrays, or torch tensors when the call's tensors were torch's.
"""

from __future__ import annotations

import ast
import numbers
import re
import sys
from typing import Any, Callable

import numpy as np

from . import _convert

# Fields of myops.v1.Value (the wire kind of one value).
TENSOR, INT, FLOAT, BOOL, STRING = 1, 2, 3, 4, 5
INT_LIST, FLOAT_LIST, TENSOR_LIST, SCALAR_TYPE, NONE = 6, 7, 8, 9, 10

# ArgumentInfo.kind / ReturnInfo.kind, as the native listing names them
# (myops.v1.ValueKind without the prefix, lower case).
KINDS = ("tensor", "int", "float", "bool", "string", "int_list", "float_list",
         "tensor_list", "scalar", "scalar_type", "other")

_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_FIXED_SIZE = re.compile(r"\[(\d+)\]")


class ArgumentError(TypeError):
    """A value that the argument's schema type does not accept."""


class CallState:
    """What converting one call's arguments learned: whether any tensor was a
    torch tensor (then tensors come back as torch tensors)."""

    __slots__ = ("torch",)

    def __init__(self) -> None:
        self.torch = False


def _is_torch_tensor(value: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


def _as_int(value: Any) -> int | None:
    """An int for an int, bool, numpy integer or bool, else None."""
    if isinstance(value, (int, np.integer, np.bool_)):
        return int(value)
    if _is_torch_tensor(value) and value.dim() == 0 and \
            not value.is_floating_point() and not value.is_complex():
        return int(value.item())
    return None


def _as_float(value: Any) -> float | None:
    """A float for any real number (not complex), else None."""
    if isinstance(value, (numbers.Real, np.bool_)):
        return float(value)
    if _is_torch_tensor(value) and value.dim() == 0 and not value.is_complex():
        return float(value.item())
    return None


def _fixed_size(type_text: str) -> int | None:
    """N of an "int[N]" / "SymInt[N]?" / "float[N]" type, else None."""
    found = _FIXED_SIZE.search(type_text)
    return int(found.group(1)) if found else None


def _tensor(value: Any, what: str, state: CallState
            ) -> tuple[int, tuple[int, ...], Any] | None:
    """(dtype_code, shape, buffer) of a numpy array or scalar or a torch
    tensor; None for other values. Unsupported dtypes raise TypeError."""
    torch_tensor = _is_torch_tensor(value)
    if not torch_tensor and not isinstance(value, (np.ndarray, np.generic)):
        return None
    code, shape, data, _ = _convert.encode(value, what)
    state.torch = state.torch or torch_tensor
    return code, tuple(shape), data


def convert_argument(value: Any, info: dict[str, Any], position: int,
                     op: str, schema: str, state: CallState
                     ) -> tuple[int, Any]:
    """The wire form ``(field, payload)`` of ``value`` for the argument
    described by ``info`` (an ArgumentInfo dict). ArgumentError (a
    TypeError) when the type does not accept the value, ValueError for an
    int outside int64."""
    kind = info["kind"]
    # The common cases first: plain Python numbers where numbers are wanted.
    exact = type(value)
    if kind == "float" and (exact is float or exact is int):
        return FLOAT, float(value)
    if kind == "int" and exact is int and _INT64_MIN <= value <= _INT64_MAX:
        return INT, value
    name, type_text = info["name"], info["type"]

    def mismatch(detail: str = "") -> ArgumentError:
        return ArgumentError(
            f"{op}() expected a value of type '{type_text}' for argument "
            f"'{name}' but instead found type '{type(value).__name__}'."
            f"{detail}\nPosition: {position}\nValue: {_short_repr(value)}"
            f"\nDeclaration: {schema}")

    def checked_int(number: int) -> int:
        if not _INT64_MIN <= number <= _INT64_MAX:
            raise ValueError(f"{op}() argument '{name}': {number} does not "
                             f"fit in int64 (the wire's int).\n"
                             f"Declaration: {schema}")
        return number

    if value is None:
        if info["optional"]:
            return NONE, None
        raise mismatch(" The argument is not optional.")
    what = f"{op}() argument '{name}'"  # names the tensor in dtype errors
    if kind == "tensor":
        tensor = _tensor(value, what, state)
        if tensor is None:
            raise mismatch(" Pass a numpy array or a torch tensor.")
        return TENSOR, tensor
    if kind == "int":
        number = _as_int(value)
        if number is None:
            raise mismatch()
        return INT, checked_int(number)
    if kind == "float":
        real = _as_float(value)
        if real is None:
            raise mismatch()
        return FLOAT, real
    if kind == "bool":
        number = _as_int(value)
        if number is None:
            raise mismatch()
        return BOOL, bool(number)
    if kind == "string":
        if not isinstance(value, str):
            raise mismatch()
        return STRING, value
    if kind == "scalar":
        if isinstance(value, (bool, np.bool_)):
            return BOOL, bool(value)
        number = _as_int(value) if not _is_torch_tensor(value) else None
        if number is not None:
            return INT, checked_int(number)
        real = _as_float(value) if not _is_torch_tensor(value) else None
        if real is None:
            raise mismatch(" A Scalar is an int, float or bool.")
        return FLOAT, real
    if kind in ("int_list", "float_list"):
        element = _as_int if kind == "int_list" else _as_float
        single = element(value) if not isinstance(value, np.ndarray) else None
        size = _fixed_size(type_text)
        if single is not None and size is not None:
            # A single number for a fixed-size list repeats (torch's rule).
            items = [single] * size
        else:
            if isinstance(value, np.ndarray) and value.ndim == 1:
                value_items = value.tolist()
            elif isinstance(value, (list, tuple)):
                value_items = value
            else:
                raise mismatch()
            items = []
            for item in value_items:
                converted = element(item)
                if converted is None:
                    raise mismatch(f" Element {len(items)} is of type "
                                   f"'{type(item).__name__}'.")
                items.append(converted)
        if kind == "int_list":
            return INT_LIST, tuple(checked_int(int(i)) for i in items)
        return FLOAT_LIST, tuple(items)
    if kind == "tensor_list":
        if not isinstance(value, (list, tuple)):
            raise mismatch(" Pass a list of numpy arrays or torch tensors.")
        tensors = []
        for index, item in enumerate(value):
            tensor = _tensor(item, f"{what}[{index}]", state)
            if tensor is None:
                raise mismatch(f" Element {index} is of type "
                               f"'{type(item).__name__}'.")
            tensors.append(tensor)
        return TENSOR_LIST, tensors
    if kind == "scalar_type":
        code = _convert.dtype_code(value)
        if code is None:
            raise mismatch(" Pass a torch.dtype or a numpy dtype that the "
                           "wire carries.")
        return SCALAR_TYPE, code
    raise mismatch(" This type cannot be sent to the server.")


def _short_repr(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def convert_result(field: int, payload: Any, state: CallState) -> Any:
    """The Python value of one returned ``(field, payload)``."""
    if field == TENSOR:
        return _convert.from_result(payload, state.torch)
    if field == TENSOR_LIST:
        return [_convert.from_result(t, state.torch) for t in payload]
    if field in (INT_LIST, FLOAT_LIST):
        return list(payload)
    if field == SCALAR_TYPE:
        return _convert.dtype_name(payload)
    return payload


# ---- defaults as Python values (for signatures) --------------------------

class DefaultText:
    """A schema default that has no plain Python spelling; repr() is its
    schema text. Only shown in signatures: defaults are applied by the
    server, never sent."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def parse_default(text: str) -> Any:
    """The Python value of a schema default's text: None, True/False, ints,
    floats (inf, nan), strings and lists of them; DefaultText otherwise."""
    words: dict[str, Callable[[], Any]] = {
        "None": lambda: None, "True": lambda: True, "False": lambda: False,
        "inf": lambda: float("inf"), "-inf": lambda: float("-inf"),
        "nan": lambda: float("nan"),
    }
    if text in words:
        return words[text]()
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return DefaultText(text)
