"""client.ops against a real server serving built-in aten operators (--ops naming them):
each remote call equals the same torch.ops call made locally, bit for bit on CPU, over
every kind of argument the wire carries (Tensor?, Tensor[], int[N] from one int, int[]?,
float[]?, bool and float defaults, Scalar and Scalar?, str, keyword-only arguments) and
of result (tuples, Tensor[], int, bool), tensors of float, integer and bool dtypes, with
overloads chosen by the arguments, and the kernel's own errors passed through."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import myops_client
from myops_testing import quick_server

torch = pytest.importorskip("torch")

OPS = ",".join([
    "aten::add", "aten::argmax", "aten::cat", "aten::clamp", "aten::div.Tensor_mode",
    "aten::eq.Tensor", "aten::topk",
    "aten::is_nonzero", "aten::layer_norm", "aten::max_pool2d", "aten::size.int",
    "aten::split_copy.Tensor", "aten::std_mean.correction", "aten::sum.dim_IntList",
    "aten::unbind_copy.int", "aten::upsample_nearest2d.vec"])


@pytest.fixture(scope="module")
def aten_server():
    s = quick_server("--ops", OPS)
    yield s
    s.stop()


@pytest.fixture
def ops(aten_server):
    with myops_client.Client(aten_server.address, timeout=30.0) as c:
        yield c.ops


def tensor(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def same(remote, local):
    """remote equals local bit for bit, structure and types included."""
    assert type(remote) is type(local), (type(remote), type(local))
    if isinstance(local, (tuple, list)):
        assert len(remote) == len(local)
        for r, l in zip(remote, local):
            same(r, l)
    elif isinstance(local, torch.Tensor):
        assert remote.dtype == local.dtype and remote.shape == local.shape
        assert torch.equal(remote, local) or (
            torch.isnan(local).any() and
            torch.equal(remote.nan_to_num(), local.nan_to_num()))
    else:
        assert remote == local


CASES = [
    ("add.Tensor", lambda: (tensor(2, 3), tensor(2, 3, seed=1)), {"alpha": 2}),
    ("add", lambda: (tensor(2, 3), tensor(3, seed=1)), {}),
    ("add", lambda: (tensor(2, 3), 2.5), {}),
    ("add.Scalar", lambda: (tensor(2, 3), 3), {"alpha": 0.5}),
    ("add", lambda: (torch.arange(6, dtype=torch.int32), torch.ones(6, dtype=torch.int32)),
     {"alpha": 3}),
    ("argmax", lambda: (tensor(3, 5),), {"dim": 1, "keepdim": True}),
    ("cat", lambda: ([tensor(2, 3), tensor(1, 3, seed=1)],), {}),
    ("cat", lambda: ((tensor(2, 3), tensor(2, 1, seed=1)), 1), {}),
    ("clamp", lambda: (tensor(4, 4), -0.5, 0.5), {}),
    ("clamp", lambda: (tensor(4, 4),), {"max": 0}),
    ("clamp.Tensor", lambda: (tensor(4, 4), None, tensor(4, seed=1)), {}),
    ("div.Tensor_mode", lambda: (tensor(3, 3), tensor(3, 3, seed=1)),
     {"rounding_mode": "floor"}),
    ("div.Tensor_mode", lambda: (tensor(3, 3), tensor(3, 3, seed=1)),
     {"rounding_mode": None}),
    ("eq.Tensor", lambda: (torch.tensor([1., 2., 3.]), torch.tensor([1., 0., 3.])), {}),
    ("is_nonzero", lambda: (torch.ones(1),), {}),
    ("layer_norm", lambda: (tensor(4, 6), [6]), {}),
    ("layer_norm", lambda: (tensor(4, 6), (6,), tensor(6, seed=1), None, 1e-3),
     {}),
    ("max_pool2d", lambda: (tensor(1, 2, 6, 6), 2), {}),
    ("max_pool2d", lambda: (tensor(1, 2, 7, 7), [3, 2]),
     {"stride": 2, "padding": 1, "ceil_mode": True}),
    ("size.int", lambda: (tensor(2, 5), 1), {}),
    ("split_copy.Tensor", lambda: (tensor(5, 4), 2), {}),
    ("std_mean.correction", lambda: (tensor(5, 4), [0]),
     {"correction": 0, "keepdim": True}),
    ("std_mean.correction", lambda: (tensor(5, 4),), {}),
    ("sum.dim_IntList", lambda: (tensor(3, 4), 1), {}),
    ("sum.dim_IntList", lambda: (torch.tensor([[True, False], [True, True]]), [0]), {}),
    ("topk", lambda: (tensor(4, 6), 3), {}),
    ("topk", lambda: (tensor(4, 6), 2, 0), {"largest": False, "sorted": True}),
    ("sum.dim_IntList", lambda: (tensor(3, 4), None), {"keepdim": True}),
    ("unbind_copy.int", lambda: (tensor(3, 2),), {"dim": 1}),
    ("upsample_nearest2d.vec", lambda: (tensor(1, 1, 2, 3), None, [2.0, 1.5]),
     {}),
    ("upsample_nearest2d.vec", lambda: (tensor(1, 1, 2, 3), [4, 4], None), {}),
]


def resolve(root, path):
    for part in path.split("."):
        root = getattr(root, part)
    return root


@pytest.mark.parametrize("path,make_args,kwargs", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_remote_equals_local(ops, path, make_args, kwargs):
    args = make_args()
    local = resolve(torch.ops.aten, path)(*args, **kwargs)
    remote = resolve(ops.aten, path)(*args, **kwargs)
    same(remote, local)


def test_numpy_in_numpy_out(ops):
    x, y = tensor(3, 4), tensor(3, 4, seed=1)
    values, means = ops.aten.std_mean.correction(x.numpy(), [1])
    assert type(values) is np.ndarray and type(means) is np.ndarray
    local = torch.ops.aten.std_mean.correction(x, [1])
    np.testing.assert_array_equal(values, local[0].numpy())
    np.testing.assert_array_equal(means, local[1].numpy())
    pieces = ops.aten.split_copy.Tensor(x.numpy(), 3, 1)
    assert [type(p) for p in pieces] == [np.ndarray, np.ndarray]
    np.testing.assert_array_equal(
        ops.aten.add(x.numpy(), y.numpy(), alpha=3),
        torch.ops.aten.add(x, y, alpha=3).numpy())


def test_schemas_from_the_server(ops):
    layer_norm = ops.aten.layer_norm
    assert layer_norm.__doc__.startswith(
        str(torch.ops.aten.layer_norm.default._schema))
    assert str(inspect.signature(layer_norm)) == (
        "(input, normalized_shape, weight=None, bias=None, eps=1e-05, "
        "cudnn_enable=True)")
    assert set(ops.aten.add.overloads()) >= {"Tensor", "Scalar", "out"}
    assert "add" in dir(ops.aten) and "aten" in dir(ops)


def test_keyword_only_given_by_position(ops):
    with pytest.raises(TypeError, match=r"argument 'rounding_mode' and those "
                                        r"after it are keyword-only"):
        ops.aten.div.Tensor_mode(tensor(2), tensor(2), "floor")


def test_errors_of_the_kernel_are_invalid_argument(ops):
    # The schema accepts these; the kernel does not, and says why.
    with pytest.raises(myops_client.InvalidArgument,
                       match="Sizes of tensors must match"):
        ops.aten.cat([tensor(2, 3), tensor(2, 4)])
    with pytest.raises(myops_client.InvalidArgument, match="normalized_shape"):
        ops.aten.layer_norm(tensor(4, 6), [5])


def test_scalar_type_argument(ops):
    x = tensor(3, 4)
    for dtype in (torch.float64, np.float64, np.dtype("float16")):
        same(ops.aten.sum.dim_IntList(x, [1], dtype=dtype),
             torch.ops.aten.sum.dim_IntList(
                 x, [1], dtype=torch.float16 if dtype == np.float16 else
                 torch.float64))
