"""client.call and client.ops against a real myops-server: the remote mirror of
torch.ops built from the server's listing, myops::scale_shift called generically equal
(bit for bit) to the typed client.scale_shift and to the reference, keywords, numpy
and torch in and out, options, and errors from the server and from local binding."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import myops_client
from client_helpers import reference

SCHEMA = "myops::scale_shift(Tensor x, float alpha, float beta) -> Tensor"


def random_array(shape, dtype, seed=0):
    return (np.random.default_rng(seed).standard_normal(shape) * 8).astype(dtype)


def test_listing_describes_scale_shift(client):
    listing = {(o["name"], o["overload"]): o for o in client.list_operators()}
    op = listing[("myops::scale_shift", "")]
    assert op["schema"] == SCHEMA and op["served"] and "cpu" in op["devices"]
    assert [(a["name"], a["kind"], a["kwarg_only"]) for a in op["arguments"]] == [
        ("x", "tensor", False), ("alpha", "float", False), ("beta", "float", False)]
    assert [r["kind"] for r in op["returns"]] == ["tensor"]
    for key, info in listing.items():
        assert info["served"] or info["reason"], key  # not served says why


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("shape", [(), (0,), (7,), (3, 5, 2)])
def test_generic_call_equals_typed_call(client, dtype, shape):
    x = random_array(shape, dtype)
    expected = reference(x, 2.0, 0.375)
    typed = client.scale_shift(x, 2.0, 0.375)
    by_ops = client.ops.myops.scale_shift(x, 2.0, 0.375)
    by_name = client.call("myops::scale_shift", x, 2.0, 0.375)
    by_overload = client.ops.myops.scale_shift.default(x, 2.0, 0.375)
    for y in (typed, by_ops, by_name, by_overload):
        assert type(y) is np.ndarray
        np.testing.assert_array_equal(y, expected, strict=True)


def test_keywords(client):
    x = random_array((4, 3), np.float32)
    expected = reference(x, 4.0, -1.5)
    for y in (client.ops.myops.scale_shift(x, beta=-1.5, alpha=4.0),
              client.ops.myops.scale_shift(x=x, alpha=4.0, beta=-1.5),
              client.call("myops::scale_shift", x, 4, beta=-1.5)):
        np.testing.assert_array_equal(y, expected, strict=True)


def test_views_and_byte_orders(client):
    x = random_array((6, 8), np.float64)
    for view in (x.T, x[::-1, ::3], x.astype(">f8")):
        y = client.ops.myops.scale_shift(view, 2.0, 1.0)
        np.testing.assert_array_equal(
            y, reference(np.ascontiguousarray(view, np.float64), 2.0, 1.0))


def test_torch_in_torch_out(client):
    torch = pytest.importorskip("torch")
    for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16):
        x = (torch.randn(5, 4, generator=torch.Generator().manual_seed(3)) * 8).to(dtype)
        y = client.ops.myops.scale_shift(x, 2.0, 0.5)
        assert isinstance(y, torch.Tensor) and y.dtype == dtype and y.shape == x.shape
        assert torch.equal(y, client.scale_shift(x, 2.0, 0.5))
        assert torch.equal(y, client.call("myops::scale_shift", x, 2.0, 0.5))


def test_the_tree_mirrors_torch_ops(client):
    assert "myops" in dir(client.ops)
    assert "scale_shift" in dir(client.ops.myops)
    packet = client.ops.myops.scale_shift
    assert "default" in packet.overloads()
    assert packet.default.__doc__.startswith(SCHEMA)
    assert SCHEMA in inspect.getdoc(packet)
    assert str(inspect.signature(packet.default)) == "(x, alpha, beta)"


def test_local_binding_errors_name_the_argument(client):
    x = np.ones(3, np.float32)
    with pytest.raises(TypeError, match="missing value for argument 'beta'"):
        client.ops.myops.scale_shift(x, 2.0)
    with pytest.raises(TypeError, match="Unknown keyword argument 'gamma'"):
        client.ops.myops.scale_shift(x, 2.0, 1.0, gamma=1)
    with pytest.raises(TypeError, match="type 'float' for argument 'alpha'"):
        client.ops.myops.scale_shift(x, "2", 1.0)
    with pytest.raises(TypeError, match="expected at most 3 argument"):
        client.call("myops::scale_shift", x, 2.0, 1.0, 0.0)


def test_server_errors(client):
    x = np.ones(3, np.float32)
    with pytest.raises(myops_client.FailedPrecondition):
        client.with_options(device="cuda:99").ops.myops.scale_shift(x, 2.0, 1.0)
    with pytest.raises(ValueError, match="not listed by the server"):
        client.call("myops::no_such_op", x)
    with pytest.raises(myops_client.InvalidArgument):
        client._call("myops::no_such_op", [])


def test_mutating_operators_are_listed_not_served(client):
    x = np.ones(3, np.float32)
    with pytest.raises(NotImplementedError,
                       match=r"myops::scale_shift_ is not served by this server: "
                             r"it writes into its argument 'x'"):
        client.ops.myops.scale_shift_(x, 2.0, 1.0)
    with pytest.raises(NotImplementedError, match="argument 'out'"):
        client.ops.myops.scale_shift.out(x, 2.0, 1.0, out=x)
    np.testing.assert_array_equal(x, np.ones(3, np.float32))


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8, np.bool_])
def test_dtypes_the_kernel_refuses(client, dtype):
    # The wire carries them; scale_shift's kernel refuses them, saying why.
    with pytest.raises(myops_client.InvalidArgument, match="scale_shift"):
        client.ops.myops.scale_shift(np.ones(3, dtype), 2.0, 1.0)


def test_timing_and_device(client):
    x = np.ones(3, np.float32)
    y, timing = client.with_options(device="cpu", return_timing=True).call(
        "myops::scale_shift", x, 2.0, 1.0)
    np.testing.assert_array_equal(y, np.full(3, 3.0, np.float32))
    assert timing.device == "cpu" and timing.total_ns > 0
