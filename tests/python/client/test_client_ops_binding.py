"""The operator table of myops_client without a server: listings written here (as
Client.list_operators() returns them) become ops trees whose calls go to a fake
invoke function. Binding of positional and keyword arguments to the schema, the
errors naming the argument, the wire form of every kind of value, overload choice,
results (numpy or torch, tuples), docstrings, signatures and dir()."""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest

from myops_client import _ops, _values

V = _values


def arg(name, type_, kind, *, optional=False, default=None, kwarg_only=False):
    return {"name": name, "type": type_, "kind": kind, "optional": optional,
            "has_default": default is not None,
            "default_value": default or "", "kwarg_only": kwarg_only}


def op(name, overload, schema, arguments, returns=("tensor",), *, served=True,
       reason=""):
    return {"name": name, "overload": overload, "schema": schema,
            "arguments": arguments,
            "returns": [{"name": "", "type": k, "kind": k} for k in returns],
            "devices": ["cpu"] if served else [], "served": served,
            "reason": reason}


T = "tensor"
SCALE_SHIFT = "myops::scale_shift(Tensor x, float alpha, float beta) -> Tensor"
SCALE_SHIFT_OUT = ("myops::scale_shift.out(Tensor x, float alpha, float beta, *, "
                   "Tensor(a!) out) -> Tensor(a!)")
KINDS = ("test::kinds(Tensor a, Tensor? b, Tensor[] c, int n, SymInt[2] size, "
         "float[] f, bool flag=False, str mode=\"mean\", Scalar s=1, *, "
         "ScalarType? dtype=None, int k=3) -> (Tensor, Tensor[], int)")

LISTING = [
    op("myops::scale_shift", "", SCALE_SHIFT,
       [arg("x", "Tensor", T), arg("alpha", "float", "float"),
        arg("beta", "float", "float")]),
    op("myops::scale_shift", "out", SCALE_SHIFT_OUT,
       [arg("x", "Tensor", T), arg("alpha", "float", "float"),
        arg("beta", "float", "float"),
        arg("out", "Tensor(a!)", T, kwarg_only=True)],
       served=False, reason="it mutates argument 'out'"),
    op("test::kinds", "", KINDS,
       [arg("a", "Tensor", T), arg("b", "Tensor?", T, optional=True),
        arg("c", "Tensor[]", "tensor_list"), arg("n", "int", "int"),
        arg("size", "SymInt[2]", "int_list"), arg("f", "float[]", "float_list"),
        arg("flag", "bool", "bool", default="False"),
        arg("mode", "str", "string", default='"mean"'),
        arg("s", "Scalar", "scalar", default="1"),
        arg("dtype", "ScalarType?", "scalar_type", optional=True,
            default="None", kwarg_only=True),
        arg("k", "int", "int", default="3", kwarg_only=True)],
       returns=("tensor", "tensor_list", "int")),
    op("test::add", "Tensor", "test::add.Tensor(Tensor self, Tensor other) -> Tensor",
       [arg("self", "Tensor", T), arg("other", "Tensor", T)]),
    op("test::add", "Scalar", "test::add.Scalar(Tensor self, Scalar other) -> Tensor",
       [arg("self", "Tensor", T), arg("other", "Scalar", "scalar")]),
    op("test::nothing", "", "test::nothing() -> ()", [], returns=()),
]


class FakeResult(bytearray):
    """Stands for _core.Result: bytes with .dtype (wire code) and .shape."""

    def __init__(self, array: np.ndarray, code: int) -> None:
        super().__init__(np.ascontiguousarray(array).tobytes())
        self.dtype, self.shape = code, tuple(array.shape)


def tensor_of(payload) -> np.ndarray:
    code, shape, data = payload
    dtype = {1: np.float32, 2: np.float64, 3: np.float16}[code]
    return np.frombuffer(memoryview(data).cast("B"), dtype).reshape(shape)


class FakeServer:
    """Records calls; computes scale_shift and test::add, echoes the rest."""

    def __init__(self) -> None:
        self.calls = []

    def invoke(self, name, arguments):
        self.calls.append((name, arguments))
        timing = "timing"
        if name == "myops::scale_shift":
            # Positional arguments come first, so their index is their place.
            values = {n or ("x", "alpha", "beta")[i]: payload
                      for i, (n, _, payload) in enumerate(arguments)}
            x = tensor_of(values["x"])
            y = (values["alpha"] * x + values["beta"]).astype(x.dtype)
            return [(V.TENSOR, FakeResult(y, values["x"][0]))], timing
        if name == "test::kinds":
            a = tensor_of(arguments[0][2])
            return [(V.TENSOR, FakeResult(a, 1)),
                    (V.TENSOR_LIST, [FakeResult(a, 1), FakeResult(a * 2, 1)]),
                    (V.INT, 7)], timing
        if name.startswith("test::add"):
            a = tensor_of(arguments[0][2])
            return [(V.TENSOR, FakeResult(a, 1))], timing
        return [], timing


@pytest.fixture
def server():
    return FakeServer()


@pytest.fixture
def ops(server):
    return _ops.Ops(_ops.Catalog(LISTING), _ops.Context(server.invoke))


def x32():
    return np.arange(6, dtype=np.float32).reshape(2, 3)


# ---- calls and the wire form -----------------------------------------------

def test_positional_call(ops, server):
    y = ops.myops.scale_shift(x32(), 2.0, 1.0)
    np.testing.assert_array_equal(y, 2 * x32() + 1)
    assert type(y) is np.ndarray and y.dtype == np.float32
    (name, wire), = server.calls
    assert name == "myops::scale_shift"
    assert [(n, f) for n, f, _ in wire] == [("", V.TENSOR), ("", V.FLOAT),
                                            ("", V.FLOAT)]
    assert wire[0][2][:2] == (1, (2, 3)) and wire[1][2] == 2.0


def test_keywords_are_sent_by_name_in_schema_order(ops, server):
    y = ops.myops.scale_shift(x32(), beta=1.0, alpha=3)
    np.testing.assert_array_equal(y, 3 * x32() + 1)
    wire = server.calls[0][1]
    assert [(n, f, p) for n, f, p in wire[1:]] == [("alpha", V.FLOAT, 3.0),
                                                   ("beta", V.FLOAT, 1.0)]
    ops.myops.scale_shift(x=x32(), alpha=1.0, beta=0.0)
    assert [n for n, _, _ in server.calls[1][1]] == ["x", "alpha", "beta"]


def test_default_overload_attribute_and_packet_agree(ops, server):
    a = ops.myops.scale_shift.default(x32(), 2.0, 1.0)
    b = ops.myops.scale_shift(x32(), 2.0, 1.0)
    np.testing.assert_array_equal(a, b)
    assert [c[0] for c in server.calls] == ["myops::scale_shift"] * 2


def test_catalog_call_by_name(server):
    catalog = _ops.Catalog(LISTING)
    context = _ops.Context(server.invoke)
    y = catalog.call(context, "myops::scale_shift", (x32(), 2.0), {"beta": 1})
    np.testing.assert_array_equal(y, 2 * x32() + 1)
    catalog.call(context, "myops::scale_shift.default", (x32(), 2.0, 1.0), {})
    catalog.call(context, "test::add.Scalar", (x32(), 2), {})
    assert [c[0] for c in server.calls] == [
        "myops::scale_shift", "myops::scale_shift", "test::add.Scalar"]
    with pytest.raises(ValueError, match=r"'myops::scale_shif'.*did you mean "
                                         r"'myops::scale_shift'"):
        catalog.call(context, "myops::scale_shif", (x32(), 2.0, 1.0), {})
    with pytest.raises(ValueError, match="no overload 'nope'.*default, out"):
        catalog.call(context, "myops::scale_shift.nope", (), {})


def test_every_kind_of_value(ops, server):
    a = x32()
    t, tl, n = ops.test.kinds(a, None, [a, a.astype(np.float64)], np.int64(4),
                              5, np.array([1.5, 2]), True, "sum", s=2.5,
                              dtype=np.float64, k=True)
    np.testing.assert_array_equal(t, a)
    assert isinstance(tl, list) and len(tl) == 2
    np.testing.assert_array_equal(tl[1], a * 2)
    assert n == 7
    wire = server.calls[0][1]
    fields = [(name, field) for name, field, _ in wire]
    assert fields == [("", V.TENSOR), ("", V.NONE), ("", V.TENSOR_LIST),
                      ("", V.INT), ("", V.INT_LIST), ("", V.FLOAT_LIST),
                      ("", V.BOOL), ("", V.STRING), ("s", V.FLOAT),
                      ("dtype", V.SCALAR_TYPE), ("k", V.INT)]
    payloads = [p for _, _, p in wire]
    assert [c[:2] for c in payloads[2]] == [(1, (2, 3)), (2, (2, 3))]
    assert payloads[3:] == [4, (5, 5), (1.5, 2.0), True, "sum", 2.5, 2, 1]
    assert type(payloads[3]) is int and type(payloads[5][1]) is float


@pytest.mark.parametrize("value,field,payload", [
    (True, V.BOOL, True), (np.bool_(False), V.BOOL, False), (3, V.INT, 3),
    (np.int32(-2), V.INT, -2), (0.5, V.FLOAT, 0.5),
    (np.float32(0.25), V.FLOAT, 0.25)])
def test_scalar_keeps_its_python_kind(ops, server, value, field, payload):
    ops.test.add.Scalar(x32(), value)
    (_, got_field, got_payload) = server.calls[0][1][1]
    assert (got_field, got_payload) == (field, payload)
    assert type(got_payload) is type(payload)


def test_defaults_are_left_to_the_server(ops, server):
    a = x32()
    ops.test.kinds(a, a, [], 1, [2, 3], [])
    assert [name for name, _, _ in server.calls[0][1]] == [""] * 6


def test_no_result_is_none_and_several_are_a_tuple(ops):
    assert ops.test.nothing() is None
    assert isinstance(ops.test.kinds(x32(), None, [], 1, 2, [1.0]), tuple)


def test_return_timing(server):
    ops = _ops.Ops(_ops.Catalog(LISTING), _ops.Context(server.invoke, True))
    y, timing = ops.myops.scale_shift(x32(), 1.0, 0.0)
    assert timing == "timing"
    np.testing.assert_array_equal(y, x32())


# ---- binding errors name the operator and the argument ----------------------

@pytest.mark.parametrize("args,kwargs,pattern", [
    ((1, 2, 3, 4), {}, r"myops::scale_shift\(\) expected at most 3 argument"),
    ((1, 2), {}, r"missing value for argument 'beta'"),
    ((), {"alpha": 1, "beta": 2}, r"missing value for argument 'x'"),
    ((1, 2, 3), {"gamma": 1}, r"Unknown keyword argument 'gamma' for operator "
                             r"'myops::scale_shift'"),
    ((1, 2, 3), {"bta": 1}, r"did you mean 'beta'"),
    ((1, 2), {"alpha": 1, "beta": 2}, r"multiple values for argument 'alpha'"),
    ("a", {}, r"expected a value of type 'Tensor' for argument 'x' but instead "
              r"found type 'str'"),
])
def test_binding_errors(ops, server, args, kwargs, pattern):
    if args == "a":
        args = ("a", 1.0, 2.0)
    with pytest.raises(TypeError, match=pattern) as excinfo:
        ops.myops.scale_shift.default(*args, **kwargs)
    assert SCALE_SHIFT in str(excinfo.value)
    assert not server.calls


@pytest.mark.parametrize("position,value,name,expected", [
    (1, "2", "alpha", "float"), (1, 1j, "alpha", "float"),
    (1, None, "alpha", "float"), (0, [1.0, 2.0], "x", "Tensor"),
    (0, 3.0, "x", "Tensor")])
def test_wrong_type_names_argument_and_type(ops, server, position, value, name,
                                            expected):
    args = [x32(), 2.0, 1.0]
    args[position] = value
    with pytest.raises(TypeError) as excinfo:
        ops.myops.scale_shift(*args)
    message = str(excinfo.value)
    assert f"type '{expected}' for argument '{name}'" in message
    assert f"found type '{type(value).__name__}'" in message
    assert not server.calls


@pytest.mark.parametrize("kwargs,name,pattern", [
    ({"n": 1.5}, "n", "type 'int'"), ({"n": "1"}, "n", "type 'int'"),
    ({"size": [1, 2.5]}, "size", "Element 1 is of type 'float'"),
    ({"size": 3.0}, "size", "type 'SymInt\\[2\\]'"),
    ({"f": 1.0}, "f", "type 'float\\[\\]'"),
    ({"c": x32()}, "c", "type 'Tensor\\[\\]'"),
    ({"c": [x32(), 1]}, "c", "Element 1 is of type 'int'"),
    ({"flag": "yes"}, "flag", "type 'bool'"),
    ({"mode": 1}, "mode", "type 'str'"),
    ({"s": "x"}, "s", "type 'Scalar'"), ({"s": 1j}, "s", "type 'Scalar'"),
    ({"dtype": "float32"}, "dtype", "type 'ScalarType\\?'"),
    ({"dtype": np.complex64}, "dtype", "type 'ScalarType\\?'"),
    ({"a": None}, "a", "not optional"),
])
def test_wrong_kind_for_each_schema_type(ops, server, kwargs, name, pattern):
    good = {"a": x32(), "b": None, "c": [], "n": 1, "size": [1, 2], "f": []}
    with pytest.raises(TypeError, match=pattern) as excinfo:
        ops.test.kinds(**{**good, **kwargs})
    assert f"argument '{name}'" in str(excinfo.value)
    assert not server.calls


def test_kwarg_only_given_by_position(ops):
    a = x32()
    with pytest.raises(TypeError, match=r"test::kinds\(\) takes 9 positional "
                                        r"argument\(s\) but 10 were given; "
                                        r"argument 'dtype'"):
        ops.test.kinds(a, None, [], 1, 2, [], False, "m", 1, np.float32)


def test_int_outside_int64(ops):
    with pytest.raises(ValueError, match=r"argument 'n': 9223372036854775808 "
                                         r"does not fit in int64"):
        ops.test.kinds(x32(), None, [], 2**63, 2, [])
    with pytest.raises(ValueError, match="argument 'size'"):
        ops.test.kinds(x32(), None, [], 1, [-2**63 - 1, 0], [])


def test_unsupported_tensor_dtype_names_argument(ops):
    with pytest.raises(TypeError, match=r"argument 'x': unsupported dtype "
                                        r"complex64"):
        ops.myops.scale_shift(np.zeros(2, np.complex64), 1.0, 0.0)


# ---- overloads ------------------------------------------------------------

def test_overload_chosen_by_arguments(ops, server):
    ops.test.add(x32(), x32())
    ops.test.add(x32(), 2)
    ops.test.add(x32(), other=2.5)
    assert [c[0] for c in server.calls] == ["test::add.Tensor", "test::add.Scalar",
                                            "test::add.Scalar"]


def test_no_overload_matches(ops, server):
    with pytest.raises(TypeError) as excinfo:
        ops.test.add(x32(), "b")
    message = str(excinfo.value)
    assert "test::add: no served overload accepts these arguments" in message
    assert "Tensor: " in message and "Scalar: " in message
    assert message.count("argument 'other'") == 2
    assert not server.calls


def test_unserved_overload_says_why(ops, server):
    packet = ops.myops.scale_shift
    with pytest.raises(NotImplementedError,
                       match=r"myops::scale_shift.out is not served by this "
                             r"server: it mutates argument 'out'"):
        packet.out(x32(), 1.0, 0.0, out=x32())
    # The packet skips it: with out=, the served default overload refuses.
    with pytest.raises(TypeError, match="Unknown keyword argument 'out'"):
        packet(x32(), 1.0, 0.0, out=x32())
    assert not server.calls


def test_only_unserved_overloads():
    listing = [op("test::inplace_", "", "test::inplace_(Tensor(a!) x) -> Tensor(a!)",
                  [arg("x", "Tensor(a!)", T)], served=False,
                  reason="it mutates argument 'x'")]
    ops = _ops.Ops(_ops.Catalog(listing), _ops.Context(FakeServer().invoke))
    with pytest.raises(NotImplementedError,
                       match=r"^test::inplace_ is not served by this server: "
                             r"it mutates argument 'x'$"):
        ops.test.inplace_(x32())
    listing.append(op("test::inplace_", "out", "test::inplace_.out(...)", [],
                      served=False, reason="it writes into 'out'"))
    ops = _ops.Ops(_ops.Catalog(listing), _ops.Context(FakeServer().invoke))
    with pytest.raises(NotImplementedError,
                       match=r"^test::inplace_ is not served by this server: "
                             r"default: it mutates argument 'x'; out: it "
                             r"writes into 'out'$"):
        ops.test.inplace_(x32())


# ---- torch in, torch out ----------------------------------------------------

def test_torch_in_torch_out(ops, server):
    torch = pytest.importorskip("torch")
    x = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    y = ops.myops.scale_shift(x, 2.0, 1.0)
    assert isinstance(y, torch.Tensor) and y.dtype == torch.float32
    torch.testing.assert_close(y, 2 * x + 1, rtol=0, atol=0)
    t, tl, _ = ops.test.kinds(x32(), None, [x], 1, 2, [], dtype=torch.float64)
    assert isinstance(t, torch.Tensor) and isinstance(tl[0], torch.Tensor)
    assert server.calls[-1][1][-1][1:] == (V.SCALAR_TYPE, 2)
    # 0-d tensors are numbers where the schema wants one, as in torch.
    ops.test.kinds(x32(), None, [], torch.tensor(4), 2, [torch.tensor(0.5)])
    assert [p for _, _, p in server.calls[-1][1]][3:6] == [4, (2, 2), (0.5,)]


def test_as_torch_overrides_the_arguments(server):
    torch = pytest.importorskip("torch")
    catalog = _ops.Catalog(LISTING)
    as_torch = _ops.Ops(catalog, _ops.Context(server.invoke, as_torch=True))
    y = as_torch.myops.scale_shift(x32(), 2.0, 1.0)
    assert isinstance(y, torch.Tensor)
    torch.testing.assert_close(y, torch.from_numpy(2 * x32() + 1), rtol=0, atol=0)
    as_numpy = _ops.Ops(catalog, _ops.Context(server.invoke, as_torch=False))
    y = as_numpy.myops.scale_shift(torch.from_numpy(x32()), 2.0, 1.0)
    assert type(y) is np.ndarray


# ---- the tree: attributes, dir(), docstrings, signatures --------------------

def test_dir_and_attributes(ops):
    assert dir(ops) == ["myops", "test"]
    assert dir(ops.test) == ["add", "kinds", "nothing"]
    assert list(ops) == ["myops::scale_shift", "test::add", "test::kinds",
                         "test::nothing"]
    assert ops.myops.scale_shift.overloads() == ["default", "out"]
    assert {"default", "out", "overloads"} <= set(dir(ops.myops.scale_shift))
    assert ops.myops.scale_shift is ops.myops.scale_shift
    with pytest.raises(AttributeError, match="no operator namespace 'torchvision'"):
        ops.torchvision
    with pytest.raises(AttributeError, match=r"did you mean 'scale_shift'"):
        ops.myops.scale_shif
    with pytest.raises(AttributeError, match=r"no overload 'Tensor'.*default, out"):
        ops.myops.scale_shift.Tensor
    assert not hasattr(ops.myops, "__wrapped__")
    assert "myops" in repr(ops) and "myops::scale_shift" in repr(
        ops.myops.scale_shift)


def test_docstrings_are_schemas(ops):
    default = ops.myops.scale_shift.default
    assert default.__doc__.startswith(SCALE_SHIFT + "\n")
    assert "devices: cpu" in default.__doc__
    assert default.schema == SCALE_SHIFT and default.served
    out = ops.myops.scale_shift.out
    assert out.__doc__.startswith(SCALE_SHIFT_OUT)
    assert "Not served: it mutates argument 'out'." in out.__doc__
    assert not out.served
    doc = ops.myops.scale_shift.__doc__
    assert SCALE_SHIFT in doc and SCALE_SHIFT_OUT in doc
    assert "myops::scale_shift(Tensor x" in inspect.getdoc(ops.myops.scale_shift)


def test_signatures(ops):
    assert str(inspect.signature(ops.myops.scale_shift)) == "(x, alpha, beta)"
    assert str(inspect.signature(ops.test.kinds)) == (
        "(a, b, c, n, size, f, flag=False, mode='mean', s=1, *, dtype=None, k=3)")
    assert str(inspect.signature(ops.myops.scale_shift.out)) == (
        "(x, alpha, beta, *, out)")


def test_parse_default():
    assert V.parse_default("None") is None
    assert V.parse_default("[]") == [] and V.parse_default("[1, 2]") == [1, 2]
    assert V.parse_default("-1") == -1 and V.parse_default("0.5") == 0.5
    assert V.parse_default("True") is True and V.parse_default('"mean"') == "mean"
    assert math.isinf(V.parse_default("inf"))
    assert repr(V.parse_default("contiguous_format")) == "contiguous_format"
