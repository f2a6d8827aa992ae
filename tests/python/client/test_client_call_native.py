"""The operator table through the native core: Client.list_operators(), Client.call and
Client.ops against call_peer.py (a grpcio server in its own process that echoes Call's
arguments). Every kind of value crosses the wire both ways; options, errors, the GIL
and reference counts. The real server's answers are in test_client_ops.py."""

from __future__ import annotations

import gc
import pathlib
import subprocess
import sys
import threading
import weakref

import numpy as np
import pytest

import myops_client

PEER = pathlib.Path(__file__).with_name("call_peer.py")


@pytest.fixture(scope="module")
def peer():
    process = subprocess.Popen([sys.executable, str(PEER)], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True)
    line = process.stdout.readline()
    if not line.startswith("listening on "):
        process.kill()
        pytest.fail(f"call_peer.py did not start: {line!r}")
    yield line.split()[-1]
    process.stdin.close()
    process.wait(timeout=30)


@pytest.fixture
def client(peer):
    with myops_client.Client(peer, timeout=30.0) as c:
        yield c


def test_list_operators(client):
    listing = client.list_operators()
    assert [(o["name"], o["overload"]) for o in listing] == [
        ("test::block", ""), ("test::echo", ""), ("test::echo", "inplace_"),
        ("test::fail", ""), ("test::nothing", ""), ("test::release", ""),
        ("test::hang", ""), ("test::hangs", "")]
    echo = listing[1]
    assert set(echo) == {"name", "overload", "schema", "arguments", "returns",
                         "devices", "served", "reason"}
    assert echo["devices"] == ["cpu", "cuda:0"] and echo["served"] is True
    assert [a["kind"] for a in echo["arguments"]] == [
        "tensor", "tensor", "tensor_list", "int", "int_list", "float_list", "bool",
        "string", "scalar", "scalar_type"]
    assert echo["arguments"][9] == {
        "name": "dtype", "type": "ScalarType?", "kind": "scalar_type",
        "optional": True, "has_default": True, "default_value": "None",
        "kwarg_only": True}
    assert echo["returns"] == [{"name": "", "type": "...", "kind": "other"}]
    assert listing[2]["served"] is False
    assert listing[2]["reason"] == "it mutates argument 'a'"


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int8,
                                   np.int16, np.int32, np.int64, np.uint8, np.bool_])
@pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 3, 4)])
def test_tensors_round_trip(client, dtype, shape):
    x = (np.random.default_rng(1).standard_normal(shape) * 50).astype(dtype)
    y = client.ops.test.echo(x)
    assert type(y) is np.ndarray and y.dtype == dtype and y.shape == shape
    np.testing.assert_array_equal(y, x)
    assert y.flags.writeable and y.flags.c_contiguous


def test_views_are_sent_as_their_values(client):
    x = np.arange(24, dtype=np.float64).reshape(4, 6)
    for view in (x.T, x[::-1, ::2], x.astype(">f8")):
        np.testing.assert_array_equal(client.call("test::echo", view), view)


def test_every_kind_of_value(client):
    a = np.arange(3, dtype=np.float32)
    out = client.call("test::echo", a, None, [a, a * 2], 7, 5, [0.5, 1.5], True,
                      "sum", 2.5, dtype=np.float16)
    assert len(out) == 11
    np.testing.assert_array_equal(out[0], a)
    assert out[1] is None
    assert isinstance(out[2], list) and len(out[2]) == 2
    np.testing.assert_array_equal(out[2][1], a * 2)
    assert out[3:] == (7, [5, 5], [0.5, 1.5], True, "sum", 2.5, "dtype",
                       "float16")
    assert type(out[3]) is int and type(out[6]) is bool


@pytest.mark.parametrize("value", [True, -3, 2**62, 0.25, float("inf")])
def test_scalars_keep_their_kind(client, value):
    echoed = client.ops.test.echo(np.zeros(1, np.float32), s=value)[2]
    assert echoed == value and type(echoed) is type(value)


def test_keywords_travel_by_name(client):
    a = np.ones(2, np.float32)
    out = client.ops.test.echo(a, n=3, mode="max")
    assert out[1:] == ("n", 3, "mode", "max")


def test_torch_in_torch_out(client):
    torch = pytest.importorskip("torch")
    for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16,
                  torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8,
                  torch.bool):
        x = torch.linspace(0, 11, 12).reshape(3, 4).to(dtype)
        y, ys = client.ops.test.echo(x, c=[x.T])[0::2]
        assert isinstance(y, torch.Tensor) and y.dtype == dtype
        assert torch.equal(y, x) and torch.equal(ys[0], x.T)
    # A dtype argument from torch comes back as its name.
    assert client.ops.test.echo(x, dtype=torch.float64)[1:] == ("dtype", "float64")
    assert client.ops.test.echo(x, dtype=torch.bool)[1:] == ("dtype", "bool")


def test_with_options(client):
    view = client.with_options(device="cuda:0", return_timing=True)
    y, timing = view.ops.test.echo(np.ones(2, np.float32))
    assert isinstance(timing, myops_client.Timing) and timing.device == "cuda:0"
    np.testing.assert_array_equal(y, np.ones(2, np.float32))
    _, timing = view.call("test::echo", np.ones(1, np.float32))
    assert timing.device == "cuda:0"
    assert client.call("test::nothing") is None  # no outputs
    with pytest.raises(TypeError, match="device"):
        client.with_options(device=0)
    with pytest.raises(ValueError, match="timeout"):
        client.with_options(timeout=-1).call("test::nothing")


def test_server_errors_are_error_subclasses(client):
    with pytest.raises(myops_client.InvalidArgument, match="argument 'x'"):
        client.ops.test.fail()
    with pytest.raises(myops_client.NotFound, match="test::nope"):
        client._call("test::nope", [])
    with pytest.raises(NotImplementedError, match="mutates argument 'a'"):
        client.ops.test.echo.inplace_(np.ones(1, np.float32))


def test_local_errors(client):
    with pytest.raises(TypeError, match=r"type 'int' for argument 'n'"):
        client.ops.test.echo(np.ones(1, np.float32), n="3")
    with pytest.raises(ValueError, match="not listed by the server"):
        client.call("test::ech", np.ones(1, np.float32))


def test_native_call_checks_its_wire_form(client):
    with pytest.raises(ValueError, match="positional argument after keyword"):
        client._call("test::echo", [("n", 2, 1), ("", 2, 1)])
    with pytest.raises(ValueError, match="value field 11"):
        client._call("test::echo", [("", 11, None)])
    with pytest.raises(ValueError, match="dtype code 99"):
        client._call("test::echo", [("", 1, (99, (1,), b"abcd"))])
    with pytest.raises(TypeError):
        client._call("test::echo", [("", 1, (1, (1,), 5))])
    with pytest.raises(TypeError):
        client._call("test::echo", [("", 1)])
    with pytest.raises(OverflowError):
        client._call("test::echo", [("", 2, 2**64)])


def test_closed_client(peer):
    client = myops_client.Client(peer)
    ops = client.ops
    client.close()
    with pytest.raises(ValueError, match="closed"):
        ops.test.echo(np.ones(1, np.float32))
    with pytest.raises(ValueError, match="closed"):
        client.list_operators()


def test_ops_do_not_keep_the_client_alive(peer):
    client = myops_client.Client(peer)
    ops = client.ops
    ref = weakref.ref(client)
    del client
    assert ref() is None  # no reference cycle through the cached tree
    with pytest.raises(ValueError, match="no longer exists"):
        ops.test.nothing()


def test_gil_released_during_call(client):
    # test::block and test::release each return only once the other is in
    # progress: the two calls overlap only if a blocked call released the GIL
    # (else the deadline ends them).
    errors = []

    def block():
        try:
            client.call("test::block")
        except BaseException as e:  # reported below
            errors.append(e)

    thread = threading.Thread(target=block)
    thread.start()
    client.call("test::release")
    thread.join()
    assert not errors, errors[0]


def test_reference_counts_are_stable(client):
    a = np.arange(4, dtype=np.float32)
    objects = [a, np.float32, None, True]
    for _ in range(3):
        client.call("test::echo", a, None, [a], dtype=np.float32, flag=True)
    gc.collect()
    counts = [sys.getrefcount(o) for o in objects]
    for _ in range(50):
        client.call("test::echo", a, None, [a], dtype=np.float32, flag=True)
    gc.collect()
    assert [sys.getrefcount(o) for o in objects] == counts


def test_listing_and_results_leave_no_objects_behind(client):
    a = np.arange(4, dtype=np.float32)

    def work():
        client.list_operators()
        client.call("test::echo", a, None, [a, a], 3, [1, 2], [0.5], True, "s", 1.5,
                    dtype=np.float64)

    for _ in range(3):
        work()
    gc.collect()
    before = len(gc.get_objects())
    for _ in range(50):
        work()
    gc.collect()
    assert len(gc.get_objects()) == before
