"""Errors of myops_client: unsupported input (TypeError), every gRPC status as its
Error subclass (from real servers where one can be provoked, else through the one
mapping function), and the argument checks of Client."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

import myops_client
from client_helpers import SMALL_MAX_ELEMENTS, SMALL_MAX_MESSAGE_BYTES

CODES = {
    "Cancelled": (1, "CANCELLED"),
    "Unknown": (2, "UNKNOWN"),
    "InvalidArgument": (3, "INVALID_ARGUMENT"),
    "DeadlineExceeded": (4, "DEADLINE_EXCEEDED"),
    "NotFound": (5, "NOT_FOUND"),
    "AlreadyExists": (6, "ALREADY_EXISTS"),
    "PermissionDenied": (7, "PERMISSION_DENIED"),
    "ResourceExhausted": (8, "RESOURCE_EXHAUSTED"),
    "FailedPrecondition": (9, "FAILED_PRECONDITION"),
    "Aborted": (10, "ABORTED"),
    "OutOfRange": (11, "OUT_OF_RANGE"),
    "Unimplemented": (12, "UNIMPLEMENTED"),
    "Internal": (13, "INTERNAL"),
    "Unavailable": (14, "UNAVAILABLE"),
    "DataLoss": (15, "DATA_LOSS"),
    "Unauthenticated": (16, "UNAUTHENTICATED"),
}


def assert_error(excinfo, cls, code_name):
    e = excinfo.value
    assert type(e) is cls and isinstance(e, myops_client.Error)
    assert e.code == CODES[cls.__name__][0] and e.code_name == code_name
    assert e.details and str(e) == f"{code_name}: {e.details}"


# ---- unsupported input ------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.uint16, np.uint32, np.uint64, ">c8",
                                   np.complex64, np.longdouble, object, "U3"])
def test_unsupported_dtype(client, dtype):
    # The wire carries the integer and bool dtypes (test_client_dtypes.py); these not.
    x = np.zeros(3, dtype)
    with pytest.raises(TypeError) as excinfo:
        client.scale_shift(x, 2.0, 1.0)
    message = str(excinfo.value)
    assert str(np.dtype(dtype)) in message
    for supported in ("float16", "float32", "float64", "bfloat16", "int8",
                      "int16", "int32", "int64", "uint8", "bool"):
        assert supported in message


def test_bad_scalars_and_device(client):
    x = np.ones(3, np.float32)
    with pytest.raises(TypeError):
        client.scale_shift(x, "2", 1.0)
    with pytest.raises(TypeError, match="device"):
        client.scale_shift(x, 2.0, 1.0, device=0)
    with pytest.raises(TypeError, match="timeout"):
        client.scale_shift(x, 2.0, 1.0, timeout="1")
    with pytest.raises(ValueError, match="timeout"):
        client.scale_shift(x, 2.0, 1.0, timeout=0)


# ---- statuses from real servers ---------------------------------------------

def test_invalid_argument_from_server(small_server):
    client = myops_client.Client(small_server.address)
    x = np.zeros(SMALL_MAX_ELEMENTS + 1, np.float16)
    with pytest.raises(myops_client.InvalidArgument) as excinfo:
        client.scale_shift(x, 2.0, 1.0)
    assert_error(excinfo, myops_client.InvalidArgument, "INVALID_ARGUMENT")
    assert str(SMALL_MAX_ELEMENTS) in excinfo.value.details
    assert isinstance(excinfo.value, ValueError)


def test_invalid_argument_from_client(server):
    client = myops_client.Client(server.address, max_message_bytes=1024)
    with pytest.raises(myops_client.InvalidArgument, match="max_message_bytes"):
        client.scale_shift(np.zeros(1024, np.float32), 2.0, 1.0)


def test_resource_exhausted(small_server):
    # A request over the server's message limit is refused by gRPC itself.
    client = myops_client.Client(small_server.address)
    x = np.zeros(SMALL_MAX_MESSAGE_BYTES // 4 + 1, np.float32)
    with pytest.raises(myops_client.ResourceExhausted) as excinfo:
        client.scale_shift(x, 2.0, 1.0)
    assert_error(excinfo, myops_client.ResourceExhausted, "RESOURCE_EXHAUSTED")


def test_failed_precondition(client):
    with pytest.raises(myops_client.FailedPrecondition) as excinfo:
        client.scale_shift(np.ones(3, np.float32), 2.0, 1.0, device="cuda:0")
    assert_error(excinfo, myops_client.FailedPrecondition,
                 "FAILED_PRECONDITION")
    assert "cuda:0" in excinfo.value.details


def test_not_found(client):
    with pytest.raises(myops_client.NotFound) as excinfo:
        client.health("no.such.Service")
    assert_error(excinfo, myops_client.NotFound, "NOT_FOUND")


@pytest.mark.parametrize("retries", [0, 2])
def test_unavailable(closed_port, retries):
    client = myops_client.Client(closed_port, timeout=10, retries=retries,
                                 retry_backoff=0.01, max_retry_backoff=0.05)
    with pytest.raises(myops_client.Unavailable) as excinfo:
        client.scale_shift(np.ones(3, np.float32), 2.0, 1.0)
    assert_error(excinfo, myops_client.Unavailable, "UNAVAILABLE")
    assert isinstance(excinfo.value, ConnectionError)
    with pytest.raises(myops_client.Unavailable):
        client.server_info()


@pytest.mark.serial  # Times a call against its deadline.
def test_deadline_exceeded_silent_server(silent_server):
    client = myops_client.Client(silent_server, timeout=0.3)
    start = time.monotonic()
    with pytest.raises(myops_client.DeadlineExceeded) as excinfo:
        client.scale_shift(np.ones(3, np.float32), 2.0, 1.0)
    assert 0.25 < time.monotonic() - start < 5
    assert_error(excinfo, myops_client.DeadlineExceeded, "DEADLINE_EXCEEDED")
    assert isinstance(excinfo.value, TimeoutError)
    with pytest.raises(myops_client.DeadlineExceeded):
        client.health(timeout=0.1)


def test_deadline_exceeded_big_tensor(client):
    x = np.ones(16 << 20, np.float32)  # 64 MiB cannot round-trip in 1 ms
    with pytest.raises(myops_client.DeadlineExceeded):
        client.scale_shift(x, 2.0, 1.0, timeout=0.001)
    client.timeout = 0.001
    with pytest.raises(myops_client.DeadlineExceeded):
        client.scale_shift(x, 2.0, 1.0)


# ---- the mapping, for every code -------------------------------------------

@pytest.mark.parametrize("name", sorted(CODES))
def test_status_mapping(name):
    cls = getattr(myops_client, name)
    code, code_name = CODES[name]
    assert issubclass(cls, myops_client.Error) and cls.__module__ == "myops_client"
    assert cls.code == code and cls.code_name == code_name
    with pytest.raises(cls) as excinfo:
        myops_client._core._raise_status(code, "what went wrong")
    e = excinfo.value
    assert type(e) is cls
    assert (e.code, e.code_name, e.details) == (code, code_name,
                                                "what went wrong")
    assert str(e) == f"{code_name}: what went wrong"


def test_status_mapping_edges():
    with pytest.raises(myops_client.Unknown) as excinfo:
        myops_client._core._raise_status(99, "")
    assert excinfo.value.code == 2 and str(excinfo.value) == "UNKNOWN"
    with pytest.raises(ValueError):
        myops_client._core._raise_status(0, "ok is not an error")
    assert issubclass(myops_client.InvalidArgument, ValueError)
    assert issubclass(myops_client.DeadlineExceeded, TimeoutError)
    assert issubclass(myops_client.Unavailable, ConnectionError)
    assert myops_client.Error("plain").details == ""


# ---- Client arguments -------------------------------------------------------

def test_client_argument_errors():
    Client = myops_client.Client
    with pytest.raises(TypeError):
        Client()
    with pytest.raises(TypeError, match="str"):
        Client(b"localhost:1")
    with pytest.raises(TypeError):
        Client("localhost:1", 5.0)  # timeout is keyword-only
    with pytest.raises(TypeError, match="nope"):
        Client("localhost:1", nope=1)
    with pytest.raises(TypeError, match="timeout must be a number"):
        Client("localhost:1", timeout="5")
    with pytest.raises(TypeError, match="timeout must be a number"):
        Client("localhost:1", timeout=True)
    for bad in (0, -1.0, math.nan, math.inf):
        with pytest.raises(ValueError, match="timeout must be > 0"):
            Client("localhost:1", timeout=bad)
    with pytest.raises(ValueError, match="max_message_bytes"):
        Client("localhost:1", max_message_bytes=0)
    with pytest.raises(ValueError, match="max_message_bytes"):
        Client("localhost:1", max_message_bytes=1 << 31)
    with pytest.raises(ValueError, match="retries"):
        Client("localhost:1", retries=-1)
    with pytest.raises(ValueError, match="retry_backoff"):
        Client("localhost:1", retry_backoff=-0.5)
    with pytest.raises(ValueError, match="max_retry_backoff"):
        Client("localhost:1", retry_backoff=1.0, max_retry_backoff=0.5)
    with pytest.raises(TypeError, match="root_certificates"):
        Client("localhost:1", root_certificates=3)
    with pytest.raises(TypeError, match="channel_args"):
        Client("localhost:1", channel_args=[("a", 1)])
    with pytest.raises(TypeError, match="int or str"):
        Client("localhost:1", channel_args={"grpc.x": 1.5})
    with pytest.raises(ValueError, match="'round_robin' or 'pick_first'"):
        Client("localhost:1", load_balancing="random")
    with pytest.raises(TypeError, match="load_balancing must be a str"):
        Client("localhost:1", load_balancing=1)
    with pytest.raises(TypeError, match="health_checking must be a bool, not str"):
        Client("localhost:1", health_checking="yes")
    for policy in ("round_robin", "pick_first", None):
        Client("ipv4:127.0.0.1:1,127.0.0.1:2", load_balancing=policy,
               health_checking=True).close()
    with pytest.raises(myops_client.InvalidArgument, match="target"):
        Client("")
    with pytest.raises(myops_client.InvalidArgument, match="client_key_pem"):
        Client("localhost:1", root_certificates="x", certificate_chain="y")


def test_type_errors_name_the_type():
    # PyErr_Format's %T exists only from Python 3.13: the type's name is spelled out.
    Client = myops_client.Client
    cases = [
        (dict(timeout="5"),
         r"^timeout must be a number of seconds \(int or float\), not str$"),
        (dict(root_certificates=3),
         r"^root_certificates must be PEM text \(str or bytes\) or None, not int$"),
        (dict(channel_args=[("a", 1)]),
         r"^channel_args must be a dict of str to int or str, not list$"),
        (dict(channel_args={1: 2}), r"^channel_args keys must be str, not int$"),
        (dict(channel_args={"grpc.x": 1.5}),
         r"^channel_args\['grpc.x'\] must be int or str, not float$"),
        (dict(token=b"t"), r"^token must be a str or None, not bytes$"),
        (dict(retries=1.5), r"^retries \(0: no retries\) must be an int, not float$"),
        (dict(max_message_bytes="1"), r"^max_message_bytes must be an int, not str$"),
    ]
    for kwargs, message in cases:
        with pytest.raises(TypeError, match=message):
            Client("localhost:1", **kwargs)


def test_call_type_errors_name_the_type(client):
    with pytest.raises(TypeError, match=r"^device must be a str .*, not int$"):
        client.scale_shift(np.ones(2, np.float32), 2.0, 1.0, device=5)
    with pytest.raises(TypeError, match=r"^timeout must be a number of seconds "
                                        r"\(int or float\), not NoneType$"):
        client.timeout = None
    with pytest.raises(TypeError, match=r"^shape must be a tuple of ints, not int$"):
        client._scale_shift(1, 3, np.ones(3, np.float32), 2.0, 1.0)


def test_numeric_arguments_out_of_range():
    Client = myops_client.Client
    for retries in (-1, 1000, 2**31 - 1, 2**31, 2**63, 2**100):
        with pytest.raises(ValueError,
                           match=r"^retries \(0: no retries\) must be in \[0, 999\], "
                                 rf"got {retries}$"):
            Client("localhost:1", retries=retries)
    with pytest.raises(TypeError, match="retries"):
        Client("localhost:1", retries=True)
    for size in (0, 2**31, 2**63, 2**100):
        with pytest.raises(ValueError,
                           match=r"^max_message_bytes must be in \[1, 2147483647\], "
                                 rf"got {size}$"):
            Client("localhost:1", max_message_bytes=size)
    for huge in (1e9 + 1, 1e300):
        with pytest.raises(ValueError, match="timeout must be > 0 and at most"):
            Client("localhost:1", timeout=huge)
    # The extremes of each range are accepted.
    Client("localhost:1", retries=999, max_message_bytes=2**31 - 1, timeout=1e9,
           retry_backoff=1e9, max_retry_backoff=1e9).close()
    Client("localhost:1", retries=0, max_message_bytes=1).close()


def test_client_properties():
    c = myops_client.Client("localhost:1", timeout=5, max_message_bytes=4096,
                            channel_args={"grpc.keepalive_time_ms": 10000,
                                          "grpc.primary_user_agent": "t"})
    assert c.target == "localhost:1" and c.timeout == 5.0
    assert c.max_message_bytes == 4096 and not c.closed
    with pytest.raises(AttributeError):
        c.target = "elsewhere"
    c.timeout = 0.5
    assert c.timeout == 0.5
    with pytest.raises(TypeError):
        c.timeout = "1"
    with pytest.raises(TypeError):
        c.timeout = None
    with pytest.raises(ValueError):
        c.timeout = -1
    with pytest.raises(TypeError, match="delete"):
        del c.timeout
    assert c.timeout == 0.5
    c.close()
    assert c.closed and c.max_message_bytes is None


def test_client_cannot_be_pickled():
    import pickle
    with pytest.raises(TypeError, match="pickle"):
        pickle.dumps(myops_client.Client("localhost:1"))


def test_uninitialized_client():
    c = myops_client.Client.__new__(myops_client.Client)
    assert c.closed and c.target is None
    with pytest.raises(ValueError, match="not initialized"):
        c.health()


def test_core_argument_errors(client):
    core = client._scale_shift
    data = np.ones(3, np.float32)
    with pytest.raises(TypeError, match="5 to 7 positional"):
        core(1, (3,), data, 2.0)
    with pytest.raises(TypeError, match="5 to 7 positional"):
        core(1, (3,), data, 2.0, 1.0, device="")
    with pytest.raises(ValueError, match="dtype code 11 is not a code of DTYPES"):
        core(11, (3,), data, 2.0, 1.0)  # the first code after bool (10)
    with pytest.raises(ValueError, match="dtype code 0"):
        core(0, (3,), data, 2.0, 1.0)
    with pytest.raises(ValueError, match="shape"):
        core(1, (-3,), data, 2.0, 1.0)
    with pytest.raises(TypeError, match="shape"):
        core(1, 3, data, 2.0, 1.0)
    with pytest.raises((BufferError, ValueError), match="contiguous"):
        core(1, (2,), data[::2], 2.0, 1.0)  # numpy refuses the C buffer
    with pytest.raises(myops_client.InvalidArgument, match="size"):
        core(1, (4,), data, 2.0, 1.0)  # 12 bytes for 4 float32
    result = core(1, [3], bytearray(data.tobytes()), 2.0, 1.0)
    assert result.shape == (3,) and result.dtype == 1 and result.nbytes == 12
