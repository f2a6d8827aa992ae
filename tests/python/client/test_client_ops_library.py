"""client.ops and client.call against a real server loading operator libraries with
--load-library: the test library (libmyops_test_ops.so, namespace myops_test: every
argument and result kind, a mutating op, a CUDA-only op, an argument without a wire
form) and torchvision's _C.so from its wheel. Each remote call equals the same call
made locally through torch.ops, bit for bit (CPU)."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

import myops_client
from myops_testing import BUILD, quick_server

torch = pytest.importorskip("torch")
torchvision = pytest.importorskip("torchvision")  # registers torch.ops.torchvision

TEST_OPS = BUILD / "tests" / "server" / "libmyops_test_ops.so"


@pytest.fixture(scope="module")
def library_server():
    if not TEST_OPS.exists():
        pytest.fail(f"{TEST_OPS} not found: build the tests (myops_test_ops) first")
    torch.ops.load_library(str(TEST_OPS))  # the local side of the comparisons
    torchvision_so = pathlib.Path(torchvision.__file__).parent / "_C.so"
    s = quick_server("--load-library", str(TEST_OPS), "--load-library", str(torchvision_so),
               "--ops", "myops::*,myops_test::*,torchvision::nms,torchvision::roi_align")
    yield s
    s.stop()


@pytest.fixture
def client(library_server):
    with myops_client.Client(library_server.address, timeout=60.0) as c:
        yield c


def tensor(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def same(remote, local):
    assert type(remote) is type(local), (type(remote), type(local))
    if isinstance(local, (tuple, list)):
        assert len(remote) == len(local)
        for r, l in zip(remote, local):
            same(r, l)
    elif isinstance(local, torch.Tensor):
        assert remote.dtype == local.dtype and remote.shape == local.shape
        assert torch.equal(remote, local)
    else:
        assert remote == local


CASES = [
    ("add3", lambda: (tensor(2, 3), tensor(2, 3, seed=1)), {}),
    ("add3", lambda: (tensor(2, 3), tensor(3, seed=1), tensor(2, 1, seed=2)),
     {"alpha": 0.5}),
    ("add3", lambda: (tensor(4), tensor(4, seed=1)), {"c": None, "alpha": -2}),
    ("minmax", lambda: (tensor(5, 5),), {}),
    ("chunks", lambda: (tensor(7, 2), 3), {}),
    ("stack_all", lambda: ([tensor(2, 3), tensor(2, 3, seed=1)],), {"dim": 1}),
    ("stack_all", lambda: ((tensor(4),),), {}),
    ("count_above", lambda: (tensor(50), 0.5), {}),
    ("count_above", lambda: (tensor(50), 0), {}),
    ("weighted_sum", lambda: ([0.5, 1.25, 3.0],), {}),
    ("weighted_sum", lambda: ((1.0, 2.0),), {"dtype": torch.float16}),
    ("describe", lambda: (tensor(2, 3), "shape"), {"upper": True}),
    ("describe", lambda: (tensor(1), "s"), {}),
    ("maybe", lambda: (tensor(3), True), {}),
    ("maybe", lambda: (tensor(3), False), {}),
    ("same", lambda: (tensor(2, 2),), {}),
    ("all_positive", lambda: (tensor(3).abs() + 1,), {}),
    ("all_positive", lambda: (tensor(3),), {}),
    ("filled", lambda: ([2, 3],), {"fill": 4, "repeat": 2}),
    ("filled", lambda: (5,), {}),
]


@pytest.mark.parametrize("name,make_args,kwargs", CASES)
def test_remote_equals_local(client, name, make_args, kwargs):
    args = make_args()
    local = getattr(torch.ops.myops_test, name)(*args, **kwargs)
    # Without tensor arguments results are numpy arrays unless asked otherwise.
    view = client.with_options(as_torch=True)
    same(getattr(view.ops.myops_test, name)(*args, **kwargs), local)
    same(view.call(f"myops_test::{name}", *args, **kwargs), local)
    if any(isinstance(a, torch.Tensor) for a in args):
        same(getattr(client.ops.myops_test, name)(*args, **kwargs), local)


def test_results_follow_the_arguments_unless_asked(client):
    filled = client.ops.myops_test.filled(3)
    assert type(filled) is np.ndarray and filled.dtype == np.int64
    assert filled.tolist() == [[7, 7, 7]] * 3
    x = tensor(4)
    assert type(client.ops.myops_test.same(x)) is torch.Tensor
    as_numpy = client.with_options(as_torch=False).ops.myops_test.same(x)
    assert type(as_numpy) is np.ndarray
    np.testing.assert_array_equal(as_numpy, x.numpy())


def test_numpy_results_for_numpy_arguments(client):
    x = tensor(6, 2)
    low, high = client.ops.myops_test.minmax(x.numpy())
    assert type(low) is np.ndarray and low.shape == () and low == x.min().item()
    pieces = client.ops.myops_test.chunks(x.numpy(), 3)
    assert [type(p) for p in pieces] == [np.ndarray] * 3
    np.testing.assert_array_equal(np.concatenate(pieces), x.numpy())


def test_roi_align_equals_the_local_call(client):
    rng = np.random.default_rng(3)
    features = rng.standard_normal((2, 8, 32, 32)).astype(np.float32)
    rois = np.array([[0, 1.5, 2.0, 20.0, 18.5], [1, 0.0, 0.0, 31.0, 31.0],
                     [0, 10.0, 4.0, 12.0, 30.0]], dtype=np.float32)
    local = torch.ops.torchvision.roi_align(torch.from_numpy(features),
                                            torch.from_numpy(rois), 0.5, 7, 7, 2, True)
    remote = client.ops.torchvision.roi_align(features, rois, 0.5, 7, 7, 2, True)
    assert type(remote) is np.ndarray and remote.shape == (3, 8, 7, 7)
    np.testing.assert_array_equal(remote, local.numpy())
    by_name = client.call("torchvision::roi_align", torch.from_numpy(features),
                          torch.from_numpy(rois), spatial_scale=0.5, pooled_height=7,
                          pooled_width=7, sampling_ratio=2, aligned=True)
    assert torch.equal(by_name, local)


def test_nms_equals_the_local_call(client):
    rng = np.random.default_rng(0)
    xy = rng.uniform(0, 100, (300, 2)).astype(np.float32)
    boxes = np.concatenate([xy, xy + rng.uniform(1, 30, (300, 2))], 1).astype(np.float32)
    scores = rng.uniform(0, 1, 300).astype(np.float32)
    for iou in (0.3, 0.5, 0.9):
        keep = client.call("torchvision::nms", boxes, scores, iou)
        local = torch.ops.torchvision.nms(torch.from_numpy(boxes),
                                          torch.from_numpy(scores), iou)
        assert type(keep) is np.ndarray and keep.dtype == np.int64
        np.testing.assert_array_equal(keep, local.numpy())
    same(client.ops.torchvision.nms(torch.from_numpy(boxes), torch.from_numpy(scores),
                                    iou_threshold=0.5),
         torch.ops.torchvision.nms(torch.from_numpy(boxes), torch.from_numpy(scores), 0.5))


def test_ops_not_served_here(client):
    x = tensor(3)
    with pytest.raises(NotImplementedError, match="writes into its argument 'x'"):
        client.ops.myops_test.bump_(x)
    with pytest.raises(NotImplementedError, match="'device' of type Device"):
        client.ops.myops_test.with_device(x, "cpu")
    with pytest.raises(myops_client.FailedPrecondition, match="no kernel"):
        client.ops.myops_test.gpu_twice(x)


def test_docstrings_and_dir(client):
    assert {"add3", "minmax", "chunks", "bump_"} <= set(dir(client.ops.myops_test))
    assert dir(client.ops.torchvision) == ["nms", "roi_align"]
    doc = client.ops.myops_test.add3.__doc__
    assert doc.startswith("myops_test::add3(Tensor a, Tensor b, Tensor? c=None, *, "
                          "float alpha=1.")
    assert "devices: cpu" in doc


def test_kernel_errors_are_invalid_argument(client):
    # The schema accepts these; the kernels' checks do not (PyTorch's message).
    with pytest.raises(myops_client.InvalidArgument):
        client.ops.myops_test.add3(tensor(2, 3), tensor(4))
    with pytest.raises(myops_client.InvalidArgument):
        client.ops.myops_test.stack_all([tensor(2), tensor(3)])
