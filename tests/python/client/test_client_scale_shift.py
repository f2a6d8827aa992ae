"""myops_client.Client.scale_shift against a real server: every dtype and layout,
numpy and torch in and out, large arrays, timing, server_info and health."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest

import myops_client
from client_helpers import reference

FLOAT_DTYPES = [np.float16, np.float32, np.float64]


def random_array(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * 8).astype(dtype)


def check(client, x, alpha=2.0, beta=0.375, **kwargs):
    """Calls the server and checks y bit-exactly (alpha a power of two), and that
    x is unchanged; returns y."""
    before = x.copy()
    flags = (x.flags.c_contiguous, x.flags.f_contiguous, x.strides)
    y = client.scale_shift(x, alpha, beta, **kwargs)
    assert type(y) is np.ndarray
    assert y.shape == x.shape and y.dtype == x.dtype
    assert y.flags.c_contiguous and y.flags.writeable
    np.testing.assert_array_equal(y, reference(x, alpha, beta), strict=True)
    np.testing.assert_array_equal(x, before, strict=True)
    assert (x.flags.c_contiguous, x.flags.f_contiguous, x.strides) == flags
    return y


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_dtypes_bit_exact(client, dtype):
    check(client, random_array((3, 5, 7), dtype))


def test_issue_example(client):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    y = client.scale_shift(x, 2.0, 1.0)
    np.testing.assert_array_equal(y, 2 * x + 1, strict=True)
    y, timing = client.scale_shift(x, 2.0, 1.0, return_timing=True)
    np.testing.assert_array_equal(y, 2 * x + 1, strict=True)
    assert isinstance(timing, myops_client.Timing)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_general_alpha(client, dtype):
    # The server computes fma(alpha, x, beta) (in float32 for float16), rounded
    # once. For float64 the exact value (Fractions) rounded once is bit-exact;
    # for float32/float16 the float64 value of the float32 fma is exact here and
    # rounding it to float32 (then float16) is within 1 ulp of the kernel.
    x = random_array(1000, dtype, seed=1)
    alpha, beta = 1 / 3, -0.1
    y = client.scale_shift(x, alpha, beta)
    if dtype is np.float64:
        a, b = Fraction(alpha), Fraction(beta)
        expected = np.array([float(a * Fraction(float(v)) + b) for v in x])
        np.testing.assert_array_equal(y, expected, strict=True)
    else:
        expected = (np.float64(np.float32(alpha)) * x.astype(np.float64) +
                    np.float64(np.float32(beta))).astype(np.float32)
        np.testing.assert_array_max_ulp(y, expected.astype(dtype), maxulp=1)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_non_finite_values(client, dtype):
    x = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 1.0], dtype)
    y = client.scale_shift(x, 2.0, 1.0)
    np.testing.assert_array_equal(y, reference(x, 2.0, 1.0), strict=True)


LAYOUTS = {
    "0-d": lambda a: a[0, 0, 0].copy().reshape(()),
    "empty": lambda a: a[:0],
    "empty-middle": lambda a: a[:, :0, :],
    "1-d": lambda a: a.reshape(-1),
    "strided": lambda a: a[:, ::2, 1::3],
    "fortran": np.asfortranarray,
    "transposed": lambda a: a.transpose(2, 0, 1),
    "negative-strides": lambda a: a[::-1, :, ::-2],
    "broadcast": lambda a: np.broadcast_to(a[:1, :1, :], (4, 6, 8)),
    "read-only": lambda a: np.frombuffer(a.tobytes(), a.dtype).reshape(a.shape),
    "unaligned": lambda a: np.frombuffer(b"\0" + a.tobytes(), a.dtype, offset=1)
    .reshape(a.shape),
}


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_layouts(client, dtype, layout):
    x = LAYOUTS[layout](random_array((4, 6, 8), dtype, seed=2))
    check(client, x)


def test_no_copy_of_contiguous_input():
    from myops_client import _convert
    x = np.ones((2, 3), np.float32)
    code, shape, data, _ = _convert.encode(x)
    assert data is x and code == 1 and shape == (2, 3)
    _, _, data, _ = _convert.encode(x.T)
    assert data is not x and data.flags.c_contiguous


def test_non_native_byte_order(client):
    x = random_array((3, 4), ">f4")
    y = check(client, x)
    assert y.dtype == np.dtype(">f4")


def test_array_likes(client):
    y = client.scale_shift([1.0, 2.0], 2.0, 1.0)
    np.testing.assert_array_equal(y, np.array([3.0, 5.0]), strict=True)
    y = client.scale_shift(np.float32(3.0), 2.0, 1.0)
    assert y.shape == () and y.dtype == np.float32 and y == 7.0


def test_large_64mib(client):
    x = random_array(16 << 20, np.float32, seed=3)  # 64 MiB
    assert x.nbytes == 64 << 20
    check(client, x)
    check(client, x.reshape(4096, 4096)[:, ::-1])


def test_output_owns_its_memory(client):
    x = np.ones(16, np.float32)
    y1 = client.scale_shift(x, 2.0, 1.0)
    y2 = client.scale_shift(x, 2.0, 1.0)
    assert not np.shares_memory(y1, y2) and not np.shares_memory(y1, x)
    y1[:] = 0  # writable, and independent of y2
    np.testing.assert_array_equal(y2, np.full(16, 3.0, np.float32))


def test_bfloat16_ml_dtypes(client):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = random_array((5, 6), np.float32, seed=4).astype(ml_dtypes.bfloat16)
    for view in (x, x.T, x[::-1, ::2], x[:0], x[0, 0].reshape(())):
        y = client.scale_shift(view, 2.0, 0.375)
        assert y.dtype == ml_dtypes.bfloat16 and y.shape == view.shape
        np.testing.assert_array_equal(
            y.view(np.uint16), reference(view, 2.0, 0.375).view(np.uint16))


def test_torch_tensors(client):
    torch = pytest.importorskip("torch")
    base = torch.randn(6, 8, generator=torch.Generator().manual_seed(5)) * 8
    for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16):
        for x in (base.to(dtype), base.to(dtype).T, base.to(dtype)[::2, 1::3],
                  base.to(dtype)[:0], base.to(dtype)[0, 0]):
            before = x.clone()
            y = client.scale_shift(x, 2.0, 0.375)
            assert isinstance(y, torch.Tensor)
            assert y.dtype == dtype and y.shape == x.shape
            assert y.device.type == "cpu" and y.is_contiguous()
            wide = x.double() if dtype == torch.float64 else x.float()
            expected = (wide * 2.0 + 0.375).to(dtype)  # exact: alpha = 2
            torch.testing.assert_close(y, expected, rtol=0, atol=0)
            assert torch.equal(x, before)


def test_torch_requires_grad_and_errors(client):
    torch = pytest.importorskip("torch")
    x = torch.ones(3, requires_grad=True)
    y = client.scale_shift(x, 2.0, 1.0)
    assert not y.requires_grad and torch.equal(y, torch.full((3,), 3.0))
    with pytest.raises(TypeError, match="complex64"):
        client.scale_shift(torch.ones(3, dtype=torch.complex64), 2.0, 1.0)
    with pytest.raises(ValueError, match="CPU tensor"):
        client.scale_shift(torch.ones(3, device="meta"), 2.0, 1.0)


def test_torch_and_ml_dtypes_not_imported(server):
    # numpy in, numpy out: importing myops_client and calling it must not import
    # torch or ml_dtypes.
    code = (
        "import sys, numpy as np, myops_client\n"
        f"c = myops_client.Client({server.address!r})\n"
        "y = c.scale_shift(np.ones(3, np.float32), 2.0, 1.0)\n"
        "assert (y == 3).all()\n"
        "bad = [m for m in ('torch', 'ml_dtypes') if m in sys.modules]\n"
        "assert not bad, bad\n")
    package_dir = pathlib.Path(myops_client.__file__).parents[1]
    env = dict(os.environ, PYTHONPATH=str(package_dir))
    subprocess.run([sys.executable, "-c", code], env=env, check=True,
                   timeout=60)


def test_timing(client):
    x = np.ones((64, 64), np.float32)
    y, timing = client.scale_shift(x, 2.0, 1.0, return_timing=True)
    assert isinstance(timing, myops_client.Timing)
    assert timing.device == "cpu"
    for name in ("decode_ns", "queue_ns", "compute_ns", "encode_ns"):
        value = getattr(timing, name)
        assert isinstance(value, int) and 0 <= value <= timing.total_ns
    assert timing.total_ns > 0
    with pytest.raises(AttributeError):
        timing.total_ns = 1
    assert "total_ns=" in repr(timing)
    with pytest.raises(TypeError):
        myops_client.Timing()


def test_device_passthrough(client):
    x = np.ones(4, np.float32)
    for device in ("", "cpu"):
        _, timing = client.scale_shift(x, 2.0, 1.0, device=device,
                                       return_timing=True)
        assert timing.device == "cpu"


def test_per_call_timeout(client):
    y = client.scale_shift(np.ones(4, np.float32), 2.0, 1.0, timeout=10)
    assert (y == 3).all()


def test_server_info(client):
    info = client.server_info()
    assert info["myops_version"] and info["torch_version"]
    assert [d["name"] for d in info["devices"]] == ["cpu"]
    assert "myops::scale_shift" in [o["name"] for o in info["operators"]]
    assert info["limits"]["max_elements"] > 0 and info["workers"] > 0


def test_health(client):
    assert client.health() is True
    assert client.health("myops.v1.Myops") is True


def test_context_manager_closes(server):
    with myops_client.Client(server.address) as c:
        assert not c.closed
        assert c.target == server.address
    assert c.closed
    with pytest.raises(ValueError, match="closed"):
        c.scale_shift(np.ones(2, np.float32), 1.0, 0.0)
    c.close()  # idempotent
    assert "closed" in repr(c)
