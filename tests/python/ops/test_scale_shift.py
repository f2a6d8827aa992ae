"""Python-side checks of torch.ops.myops: opcheck, gradcheck, torch.compile and Meta.

One sample_inputs() generator drives every test; CUDA twins run only with a GPU.
"""

import pytest
import torch

import myops  # noqa: F401  (registers torch.ops.myops)

OPS = torch.ops.myops
DEVICES = [
    "cpu",
    pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")),
]
DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)


def sample_inputs(device, dtypes=DTYPES, requires_grad=False):
    """Yields (name, x, alpha, beta): contiguous, 0-d, empty and non-contiguous inputs."""
    for dtype in dtypes:
        def make(*shape):
            t = torch.randn(shape, dtype=torch.float32, device=device).to(dtype)
            return t.requires_grad_(requires_grad) if requires_grad else t

        yield "contiguous", make(3, 5), 2.0, 1.0
        yield "0-d", make(), -1.5, 0.25
        yield "empty", make(0, 4), 3.0, -2.0
        yield "odd length", make(37), 0.5, 4.0
        # Non-contiguous views are made from a leaf so gradcheck sees the view's grad.
        base = make(6, 8)
        yield "transposed", base.t(), 1.25, -1.0
        yield "strided slice", base[::2, 1::3], -0.75, 2.0


def ids(samples):
    return [f"{name}-{str(x.dtype).removeprefix('torch.')}" for name, x, *_ in samples]


def reference(x, alpha, beta):
    return (x.detach().double() * alpha + beta).to(x.dtype)


@pytest.mark.parametrize("device", DEVICES)
def test_matches_reference(device):
    for name, x, a, b in sample_inputs(device):
        y = OPS.scale_shift(x, a, b)
        assert y.is_contiguous(), name
        torch.testing.assert_close(y, reference(x, a, b), msg=name)


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck_functional(device):
    for name, x, a, b in sample_inputs(device, requires_grad=False):
        torch.library.opcheck(OPS.scale_shift.default, (x, a, b))
    for name, x, a, b in sample_inputs(device, dtypes=(torch.float64,), requires_grad=True):
        torch.library.opcheck(OPS.scale_shift.default, (x, a, b))


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck_inplace(device):
    for name, x, a, b in sample_inputs(device):
        torch.library.opcheck(OPS.scale_shift_.default, (x.clone(), a, b))


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck_out(device):
    for name, x, a, b in sample_inputs(device):
        out = torch.empty(x.shape, dtype=x.dtype, device=device)
        torch.library.opcheck(OPS.scale_shift.out, (x, a, b), {"out": out})


@pytest.mark.parametrize("device", DEVICES)
def test_inplace_and_out_values(device):
    for name, x, a, b in sample_inputs(device):
        expected = reference(x, a, b)
        y = x.clone()
        assert OPS.scale_shift_(y, a, b) is y
        torch.testing.assert_close(y, expected, msg=name)
        # A strided out (transposed storage) for 2-D inputs, a plain one otherwise.
        if x.dim() == 2:
            out = torch.empty(x.shape[::-1], dtype=x.dtype, device=device).t()
        else:
            out = torch.empty_like(x)
        assert OPS.scale_shift.out(x, a, b, out=out) is out
        torch.testing.assert_close(out, expected, msg=name)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("out_slice", [slice(2, 8), slice(2, 2)], ids=["overlapping", "empty-grows-into-x"])
def test_out_overlapping_input_raises(device, out_slice):
    # An empty out is resized in place: base[2:2] becomes base[2:8], which overlaps base[:6].
    base = torch.arange(8, dtype=torch.float32, device=device)
    before = base.clone()
    with pytest.raises(RuntimeError, match="some elements of the input tensor and the written-to tensor refer"):
        OPS.scale_shift.out(base[:6], 2.0, 1.0, out=base[out_slice])
    torch.testing.assert_close(base, before)


@pytest.mark.parametrize("device", DEVICES)
def test_gradcheck_and_gradgradcheck(device):
    for name, x, a, b in sample_inputs(device, dtypes=(torch.float64,), requires_grad=True):
        fn = lambda t: OPS.scale_shift(t, a, b)  # noqa: E731
        assert torch.autograd.gradcheck(fn, (x,)), name
        assert torch.autograd.gradgradcheck(fn, (x,)), name


@pytest.mark.parametrize("device", DEVICES)
def test_torch_compile_fullgraph(device):
    def fn(x):
        y = x.clone()
        OPS.scale_shift_(y, 0.5, 2.0)  # in place: traced through the Functionalize kernel
        out = torch.empty(x.shape, dtype=x.dtype, device=x.device)  # Dynamo: out= must be contiguous
        OPS.scale_shift.out(x, 3.0, 0.0, out=out)
        return OPS.scale_shift(x, 2.0, 1.0).relu() + y * out

    # Dynamo caches per code object, and `fn` is one code object for every device: without
    # a reset, the cpu run's graphs count toward the cuda run's recompile limit (8), and the
    # samples' ranks and strides need about six graphs per device.
    torch._dynamo.reset()
    compiled = torch.compile(fn, fullgraph=True)
    for name, x, a, b in sample_inputs(device, dtypes=(torch.float32,)):
        torch.testing.assert_close(compiled(x), fn(x), msg=name)


def test_export_keeps_a_dynamic_dimension():
    # The Meta kernels use symbolic sizes: torch.export with a dynamic batch keeps it
    # dynamic through scale_shift and its out= variant (concrete sizes would specialize it).
    class Model(torch.nn.Module):
        def forward(self, x):
            y = torch.ops.myops.scale_shift(x, 2.0, 1.0)
            return torch.ops.myops.scale_shift.out(y, 0.5, 0.0, out=torch.empty_like(y))

    batch = torch.export.Dim("batch", min=2, max=64)
    exported = torch.export.export(Model(), (torch.randn(3, 4),), dynamic_shapes={"x": {0: batch}})
    [output] = [n for n in exported.graph.nodes if n.op == "output"]
    size = output.args[0][0].meta["val"].shape[0]
    assert not isinstance(size, int), "the batch dimension was specialized"
    x = torch.randn(7, 4)
    torch.testing.assert_close(exported.module()(x), (x * 2 + 1) * 0.5)


def test_meta_device():
    x = torch.empty(4, 6, dtype=torch.bfloat16, device="meta").t()
    y = OPS.scale_shift(x, 2.0, 1.0)
    assert y.device.type == "meta" and y.shape == (6, 4) and y.dtype == torch.bfloat16
    assert y.stride() == (4, 1)
    out = torch.empty(0, dtype=torch.bfloat16, device="meta")
    assert OPS.scale_shift.out(x, 2.0, 1.0, out=out).shape == (6, 4)


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.bool, torch.complex64])
def test_unsupported_dtypes_raise_type_error(dtype):
    x = torch.ones(3, dtype=dtype)
    with pytest.raises(TypeError, match=r"unsupported dtype .* expected one of Float, Double, Half, BFloat16"):
        OPS.scale_shift(x, 1.0, 0.0)


def test_out_dtype_mismatch_raises_type_error():
    with pytest.raises(TypeError, match="'out' has dtype Double but 'x' has dtype Float"):
        OPS.scale_shift.out(torch.ones(3), 1.0, 0.0, out=torch.empty(3, dtype=torch.float64))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cpu_out_for_cuda_input_raises_value_error():
    with pytest.raises(ValueError, match="'out' is on cpu but 'x' is on cuda"):
        OPS.scale_shift.out(torch.ones(3, device="cuda"), 1.0, 0.0, out=torch.empty(3))
