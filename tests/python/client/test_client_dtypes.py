"""Every dtype in the Python client: the one table (myops_client._core.DTYPES,
the C++ table shared with the server) against numpy's types and the wire codes;
numpy arrays and torch tensors of the integer and bool dtypes sent and received
unchanged through an echo server (bench/echo_server answers with its input);
and the real server refusing them in scale_shift with InvalidArgument and
PyTorch's message naming the dtype."""

from __future__ import annotations

import numpy as np
import pytest

import myops_client
from myops_testing import ECHO_SERVER, quick_server
from myops_client import _convert

# Name -> (wire code, PyTorch's name in the operator's message).
INTEGER_AND_BOOL = {
    "int8": (5, "Char"),
    "int16": (6, "Short"),
    "int32": (7, "Int"),
    "int64": (8, "Long"),
    "uint8": (9, "Byte"),
    "bool": (10, "Bool"),
}


@pytest.fixture(scope="module")
def echo():
    s = quick_server(binary=ECHO_SERVER)
    yield s
    s.stop()


@pytest.fixture
def echo_client(echo):
    with myops_client.Client(echo.address, timeout=30.0) as c:
        yield c


def values(name: str, shape: tuple[int, ...] = (3, 4)) -> np.ndarray:
    """Seeded values over the whole range of the dtype (False and True for bool)."""
    rng = np.random.default_rng(5)
    if name == "bool":
        return rng.integers(0, 2, shape).astype(np.bool_)
    info = np.iinfo(name)
    return rng.integers(info.min, info.max, shape, dtype=name, endpoint=True)


def test_table_matches_numpy_and_the_wire():
    table = _convert.DTYPES
    assert [d.name for d in table] == [
        "float32", "float64", "float16", "bfloat16", "int8", "int16", "int32",
        "int64", "uint8", "bool"]
    assert [d.code for d in table] == list(range(1, 11))
    for d in table:
        if d.numpy_str is None:
            assert d.name == "bfloat16" and d.itemsize == 2 and d.is_floating
            continue
        np_dtype = np.dtype(d.numpy_str)
        assert np_dtype == np.dtype(d.name)
        assert np_dtype.str == d.numpy_str and np_dtype.itemsize == d.itemsize
        assert (np_dtype.kind == "f") == d.is_floating
    for name, (code, _) in INTEGER_AND_BOOL.items():
        assert _convert.encode(values(name))[0] == code


@pytest.mark.parametrize("name", INTEGER_AND_BOOL)
def test_numpy_arrays_round_trip(echo_client, name):
    x = values(name)
    cases = {"contiguous": x, "transposed": x.T, "strided": x[:, ::2],
             "empty": x[:0], "0-d": np.asarray(x[1, 2])}
    for label, array in cases.items():
        y, timing = echo_client.scale_shift(array, 2.0, 1.0, return_timing=True)
        assert timing.device == "echo", label
        assert y.dtype == np.dtype(name) and y.shape == array.shape, label
        np.testing.assert_array_equal(y, array, err_msg=label)


@pytest.mark.parametrize("name", ["int16", "int32", "int64"])
def test_non_native_byte_order_comes_back_in_it(echo_client, name):
    x = values(name).astype(np.dtype(name).newbyteorder(">"))
    y = echo_client.scale_shift(x, 2.0, 1.0)
    assert y.dtype == x.dtype
    np.testing.assert_array_equal(y, x)


@pytest.mark.parametrize("name", INTEGER_AND_BOOL)
def test_torch_tensors_round_trip(echo_client, name):
    torch = pytest.importorskip("torch")
    x = torch.from_numpy(values(name))
    y = echo_client.scale_shift(x, 2.0, 1.0)
    assert isinstance(y, torch.Tensor) and y.dtype == x.dtype
    assert torch.equal(y, x)


@pytest.mark.parametrize("name", INTEGER_AND_BOOL)
def test_scale_shift_refuses_integer_and_bool(client, name):
    torch_name = INTEGER_AND_BOOL[name][1]
    with pytest.raises(myops_client.InvalidArgument) as excinfo:
        client.scale_shift(values(name), 2.0, 1.0)
    assert f"unsupported dtype {torch_name} for 'x'" in excinfo.value.details


def test_scale_shift_refuses_an_integer_torch_tensor(client):
    torch = pytest.importorskip("torch")
    with pytest.raises(myops_client.InvalidArgument, match="unsupported dtype Int"):
        client.scale_shift(torch.ones(3, dtype=torch.int32), 2.0, 1.0)
