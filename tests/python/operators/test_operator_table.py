"""The operator table end to end: ListOperators describes the served schemas, Call
binds positional and named arguments of every wire kind, runs the op through the
dispatcher and returns every result kind; bad calls get INVALID_ARGUMENT naming the
argument. Against a real myops-server loading libmyops_test_ops.so."""

from __future__ import annotations

import grpc
import numpy as np
import pytest

from values import request, result


def call(stub, pb, op, *args, **kwargs):
    response = stub.Call(request(pb, op, *args, **kwargs), timeout=60)
    return [result(v) for v in response.outputs]


def error(stub, pb, op, *args, **kwargs):
    with pytest.raises(grpc.RpcError) as raised:
        stub.Call(request(pb, op, *args, **kwargs), timeout=60)
    return raised.value.code(), raised.value.details()


@pytest.fixture(scope="module")
def listing(stub, stubs):
    pb, _ = stubs
    ops = stub.ListOperators(pb.ListOperatorsRequest(), timeout=60).operators
    return {(o.name + ("." + o.overload if o.overload else "")): o for o in ops}


def test_listing_describes_schemas_kinds_defaults_and_devices(listing, stubs):
    pb, _ = stubs
    add3 = listing["myops_test::add3"]
    assert add3.schema.startswith("myops_test::add3(Tensor a, Tensor b, Tensor? c=None, *")
    args = {a.name: a for a in add3.arguments}
    assert args["c"].optional and args["c"].has_default and args["c"].default_value == "None"
    assert args["alpha"].kwarg_only and args["alpha"].kind == pb.VALUE_KIND_FLOAT
    assert not args["a"].has_default and args["a"].kind == pb.VALUE_KIND_TENSOR
    assert list(add3.devices) == ["cpu"] and add3.served
    kinds = {a.name: (a.type, a.kind) for a in listing["myops_test::weighted_sum"].arguments}
    assert kinds == {"weights": ("float[]", pb.VALUE_KIND_FLOAT_LIST),
                     "dtype": ("ScalarType?", pb.VALUE_KIND_SCALAR_TYPE)}
    filled = {a.name: a.type for a in listing["myops_test::filled"].arguments}
    assert filled == {"size": "int[2]", "fill": "int", "repeat": "SymInt"}
    assert [r.name for r in listing["myops_test::minmax"].returns] == ["min", "max"]
    assert listing["myops_test::chunks"].returns[0].kind == pb.VALUE_KIND_TENSOR_LIST
    # Listed but refused, each with its reason.
    assert not listing["myops_test::bump_"].served
    assert "writes into its argument 'x'" in listing["myops_test::bump_"].reason
    assert not listing["myops::scale_shift.out"].served
    assert "'device' of type Device" in listing["myops_test::with_device"].reason
    # A kernel for CUDA only: served, but on none of this CPU server's devices.
    assert listing["myops_test::gpu_twice"].served
    assert list(listing["myops_test::gpu_twice"].devices) == []
    # Only what --ops named.
    assert "torchvision::nms" in listing and "torchvision::roi_pool" not in listing
    assert not any(name.startswith("aten::") for name in listing)


def test_tensors_optional_tensor_and_kwarg_only_default(stub, stubs):
    pb, _ = stubs
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.full((2, 3), 0.5, dtype=np.float32)
    [out] = call(stub, pb, "myops_test::add3", a, b)
    np.testing.assert_array_equal(out, a + b)
    [out] = call(stub, pb, "myops_test::add3", a, b, None, alpha=4.0)
    np.testing.assert_array_equal(out, a + 4 * b)
    [out] = call(stub, pb, "myops_test::add3", a, b=b, c=a, alpha=2)  # an int for a float
    np.testing.assert_array_equal(out, a + 2 * b + a)


def test_tuple_and_list_results_and_list_arguments(stub, stubs):
    pb, _ = stubs
    x = np.array([3.0, -1.0, 7.5, 2.0], dtype=np.float64)
    lo, hi = call(stub, pb, "myops_test::minmax", x)
    assert (lo.item(), hi.item(), lo.shape) == (-1.0, 7.5, ())
    [parts] = call(stub, pb, "myops_test::chunks", x, 2)
    assert [p.tolist() for p in parts] == [[3.0, -1.0], [7.5, 2.0]]
    [stacked] = call(stub, pb, "myops_test::stack_all", [x, x * 2], dim=1)
    np.testing.assert_array_equal(stacked, np.stack([x, x * 2], axis=1))


def test_scalars_strings_and_scalar_types(stub, stubs):
    pb, _ = stubs
    x = np.array([0.5, 1.5, 2.5, 3.5], dtype=np.float32)
    assert call(stub, pb, "myops_test::count_above", x, 1) == [3]
    assert call(stub, pb, "myops_test::count_above", x, 2.0) == [2]
    assert call(stub, pb, "myops_test::count_above", x, True) == [3]
    assert call(stub, pb, "myops_test::weighted_sum", [0.5, 0.25]) == [1.0]
    assert call(stub, pb, "myops_test::weighted_sum", [1, 1, 1]) == [6.0]  # ints as floats
    assert call(stub, pb, "myops_test::weighted_sum", [1.5, 1.0], ("dtype", 7)) == [3.0]
    assert call(stub, pb, "myops_test::describe", x, "t=") == ["t=1d"]
    assert call(stub, pb, "myops_test::describe", x, "t=", upper=True) == ["T=1D"]
    assert call(stub, pb, "myops_test::all_positive", x) == [True]
    assert call(stub, pb, "myops_test::all_positive", -x) == [False]


def test_int_lists_defaults_and_symint(stub, stubs):
    pb, _ = stubs
    [out] = call(stub, pb, "myops_test::filled", [2, 3])
    assert out.dtype == np.int64 and out.shape == (2, 3) and (out == 7).all()
    [out] = call(stub, pb, "myops_test::filled", 2, fill=-1, repeat=3)  # one int for int[2]
    assert out.shape == (6, 2) and (out == -1).all()


def test_optional_result_and_results_never_alias_the_request(stub, stubs):
    pb, _ = stubs
    x = np.arange(4, dtype=np.float32)
    assert call(stub, pb, "myops_test::maybe", x, False) == [None]
    [twice] = call(stub, pb, "myops_test::maybe", x, True)
    np.testing.assert_array_equal(twice, 2 * x)
    [same] = call(stub, pb, "myops_test::same", x)
    np.testing.assert_array_equal(same, x)


@pytest.mark.parametrize("args, kwargs, expected", [
    ((), {}, "missing required argument 'a'"),
    ((np.ones(2, np.float32),), {}, "missing required argument 'b'"),
    ((np.ones(2, np.float32),) * 2 + (None, 2.0), {},
     "takes 3 positional arguments but 4 were given"),
    ((np.ones(2, np.float32), "b"), {}, "argument 'b' (position 2) must be Tensor, not str"),
    ((np.ones(2, np.float32),) * 2, {"gamma": 1.0}, "unexpected keyword argument 'gamma'"),
    ((np.ones(2, np.float32),) * 2, {"a": np.ones(2, np.float32)},
     "got multiple values for argument 'a'"),
    ((np.ones(2, np.float32),) * 2, {"alpha": None}, "argument 'alpha' (position 4) must be float"),
])
def test_bad_arguments_are_invalid_argument_naming_the_argument(stub, stubs, args, kwargs,
                                                                expected):
    pb, _ = stubs
    code, details = error(stub, pb, "myops_test::add3", *args, **kwargs)
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert expected in details and "myops_test::add3" in details


def test_refused_calls(stub, stubs):
    pb, _ = stubs
    x = np.ones(3, np.float32)
    code, details = error(stub, pb, "myops_test::nope", x)
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "unknown operator 'myops_test::nope'" in details
    code, details = error(stub, pb, "myops_test::bump_", x)
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "is not served" in details
    code, details = error(stub, pb, "torchvision::roi_pool", x)
    assert code == grpc.StatusCode.INVALID_ARGUMENT  # loaded, but not chosen by --ops
    code, details = error(stub, pb, "myops_test::gpu_twice", x)
    assert code == grpc.StatusCode.FAILED_PRECONDITION
    assert "has no kernel here: none of this server's devices (cpu)" in details
    # A kernel's own dtype check, passed through: nms wants boxes and scores of one dtype.
    code, details = error(stub, pb, "torchvision::nms", np.ones((2, 4), np.float64),
                          np.ones(2, np.float32), 0.5)
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "same type" in details
    # A Value with nothing set, and an unknown scalar type.
    bad = pb.CallRequest(op="myops_test::chunks", arguments=[pb.Argument(value=pb.Value())])
    with pytest.raises(grpc.RpcError) as raised:
        stub.Call(bad, timeout=60)
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "argument 1 has no value" in raised.value.details()
    code, details = error(stub, pb, "myops_test::weighted_sum", [1.0], ("dtype", 99))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "unknown scalar_type 99" in details


def test_call_stream_pipelines_results_and_errors(stub, stubs):
    pb, _ = stubs
    x = np.arange(8, dtype=np.float32)
    requests = [request(pb, "myops_test::add3", x, x, request_id=i) if i % 3 else
                request(pb, "myops_test::nope", request_id=i) for i in range(30)]
    seen = {}
    for r in stub.CallStream(iter(requests), timeout=60):
        seen[r.request_id] = r
    assert sorted(seen) == list(range(30))
    for i, r in seen.items():
        if i % 3:
            np.testing.assert_array_equal(result(r.response.outputs[0]), 2 * x)
        else:
            assert r.error.code == grpc.StatusCode.INVALID_ARGUMENT.value[0]


def test_scale_shift_through_call_equals_scale_shift(stub, stubs):
    pb, _ = stubs
    x = np.random.default_rng(0).standard_normal((64, 33)).astype(np.float32)
    [via_call] = call(stub, pb, "myops::scale_shift", x, 2.5, beta=-1.0)
    typed = stub.ScaleShift(pb.ScaleShiftRequest(
        input=pb.Tensor(dtype=1, shape=list(x.shape), data=x.tobytes()), alpha=2.5, beta=-1.0),
        timeout=60)
    np.testing.assert_array_equal(
        via_call, np.frombuffer(typed.output.data, np.float32).reshape(x.shape))


def test_calls_are_counted_per_operator(ops_server, stub, stubs):
    pb, _ = stubs
    x = np.ones(4, np.float32)
    before = ops_server.metrics()
    key = 'myops_operator_calls_total{code="OK",op="myops_test::add3"}'
    bad = 'myops_operator_calls_total{code="INVALID_ARGUMENT",op=""}'
    call(stub, pb, "myops_test::add3", x, x)
    error(stub, pb, "myops_test::not_an_op_" + "x" * 50)
    after = ops_server.metrics()
    assert after[key] - before.get(key, 0) == 1
    assert after[bad] - before.get(bad, 0) == 1
    assert not any("not_an_op" in k for k in after)  # client strings never become labels


def test_bool_tensors_hold_only_zeros_and_ones(stub, stubs):
    pb, _ = stubs
    good = np.array([True, False, True])
    assert call(stub, pb, "myops_test::all_positive", good) == [False]
    bad = pb.CallRequest(op="myops_test::all_positive", arguments=[pb.Argument(value=pb.Value(
        tensor=pb.Tensor(dtype=10, shape=[3], data=b"\x01\x02\x00")))])
    with pytest.raises(grpc.RpcError) as raised:
        stub.Call(bad, timeout=60)
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "bool tensor with a byte other than 0 or 1" in raised.value.details()
