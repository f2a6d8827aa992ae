"""A peer server of ListOperators and Call for the Python client's native tests, written
with grpcio and protobuf's generated code (independent of the client's codec). It runs in
its own process: grpcio must not share one with myops_client (see tests/python/faults).

    python call_peer.py      # prints "listening on 127.0.0.1:PORT"; stops at EOF on stdin

Operators (LISTING below): "test::echo" returns its arguments' values in order, each
keyword's value preceded by its name as a string; "test::block" and "test::release"
meet: each returns only once the other is in progress too (so two calls of one client
overlap, or time out with DEADLINE_EXCEEDED); "test::nothing" returns no outputs;
"test::fail" ends with INVALID_ARGUMENT; "test::hang" returns only when the client
cancels it (or its deadline passes) and "test::hangs" returns how many hangs have
started and how many of them saw their RPC cancelled, as an int list. Other ops get
NOT_FOUND. The timing's device is the request's device ("cpu" when empty), so tests
see which device was asked for.
"""

from __future__ import annotations

import importlib
import pathlib
import shutil
import sys
import tempfile
import threading
from concurrent import futures

import grpc
from grpc_tools import protoc

REPO = pathlib.Path(__file__).resolve().parents[3]


def load_messages():
    """myops.v1's generated messages, under the module name myops_peer_v1."""
    out = pathlib.Path(tempfile.mkdtemp(prefix="myops_call_peer_"))
    (out / "myops_peer_v1").mkdir()
    shutil.copy(REPO / "proto" / "myops" / "v1" / "myops.proto", out / "myops_peer_v1")
    if protoc.main(["protoc", f"-I{out}", f"--python_out={out}",
                    "myops_peer_v1/myops.proto"]) != 0:
        raise RuntimeError("grpc_tools.protoc failed")
    sys.path.insert(0, str(out))
    return importlib.import_module("myops_peer_v1.myops_pb2")


pb2 = load_messages()

ECHO = ("test::echo(Tensor a, Tensor? b=None, Tensor[] c=[], int n=0, int[2] size=1, "
        "float[] f=[], bool flag=False, str mode=\"mean\", Scalar s=1, *, "
        "ScalarType? dtype=None) -> ...")


def argument(name, type_, kind, default=None, optional=False, kwarg_only=False):
    return pb2.ArgumentInfo(name=name, type=type_, kind=kind, optional=optional,
                            has_default=default is not None,
                            default_value=default or "", kwarg_only=kwarg_only)


LISTING = pb2.ListOperatorsResponse(operators=[
    pb2.OperatorInfo(name="test::block", schema="test::block() -> ()", served=True,
                     devices=["cpu"]),
    pb2.OperatorInfo(
        name="test::echo", schema=ECHO, served=True, devices=["cpu", "cuda:0"],
        arguments=[
            argument("a", "Tensor", pb2.VALUE_KIND_TENSOR),
            argument("b", "Tensor?", pb2.VALUE_KIND_TENSOR, "None", optional=True),
            argument("c", "Tensor[]", pb2.VALUE_KIND_TENSOR_LIST, "[]"),
            argument("n", "int", pb2.VALUE_KIND_INT, "0"),
            argument("size", "int[2]", pb2.VALUE_KIND_INT_LIST, "1"),
            argument("f", "float[]", pb2.VALUE_KIND_FLOAT_LIST, "[]"),
            argument("flag", "bool", pb2.VALUE_KIND_BOOL, "False"),
            argument("mode", "str", pb2.VALUE_KIND_STRING, '"mean"'),
            argument("s", "Scalar", pb2.VALUE_KIND_SCALAR, "1"),
            argument("dtype", "ScalarType?", pb2.VALUE_KIND_SCALAR_TYPE, "None",
                     optional=True, kwarg_only=True)],
        returns=[pb2.ReturnInfo(type="...", kind=pb2.VALUE_KIND_OTHER)]),
    pb2.OperatorInfo(name="test::echo", overload="inplace_",
                     schema="test::echo.inplace_(Tensor(a!) a) -> Tensor(a!)",
                     served=False, reason="it mutates argument 'a'",
                     arguments=[argument("a", "Tensor(a!)", pb2.VALUE_KIND_TENSOR)],
                     returns=[pb2.ReturnInfo(type="Tensor(a!)",
                                             kind=pb2.VALUE_KIND_TENSOR)]),
    pb2.OperatorInfo(name="test::fail", schema="test::fail() -> ()", served=True,
                     devices=["cpu"]),
    pb2.OperatorInfo(name="test::nothing", schema="test::nothing() -> ()",
                     served=True, devices=["cpu"]),
    pb2.OperatorInfo(name="test::release", schema="test::release() -> ()",
                     served=True, devices=["cpu"]),
    pb2.OperatorInfo(name="test::hang", schema="test::hang() -> ()", served=True,
                     devices=["cpu"]),
    pb2.OperatorInfo(name="test::hangs", schema="test::hangs() -> int[]", served=True,
                     devices=["cpu"],
                     returns=[pb2.ReturnInfo(type="int[]", kind=pb2.VALUE_KIND_INT_LIST)]),
])

# test::block and test::release: how many of each have arrived (under `meeting`).
meeting = threading.Condition()
arrived = {"test::block": 0, "test::release": 0}


def meet(op: str, context) -> None:
    """Returns once the other op of the pair has arrived as often as this one."""
    other = "test::release" if op == "test::block" else "test::block"
    with meeting:
        arrived[op] += 1
        mine = arrived[op]
        meeting.notify_all()
        if not meeting.wait_for(lambda: arrived[other] >= mine,
                                timeout=context.time_remaining()):
            arrived[op] -= 1
            context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, f"{other} never came")


# test::hang: how many have started and how many saw their RPC cancelled (under `meeting`).
hangs = {"started": 0, "cancelled": 0}


def hang(context) -> None:
    ended = threading.Event()
    context.add_callback(ended.set)  # runs when the RPC ends, e.g. cancelled by the client
    with meeting:
        hangs["started"] += 1
    ended.wait(timeout=context.time_remaining())
    if context.is_active():
        context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, "test::hang was never cancelled")
    with meeting:
        hangs["cancelled"] += 1


def call(request, context):
    if request.op == "test::fail":
        context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                      "test::fail: argument 'x' is always wrong")
    outputs = []
    if request.op == "test::echo":
        for arg in request.arguments:
            if arg.name:
                outputs.append(pb2.Value(string_value=arg.name))
            outputs.append(arg.value)
    elif request.op in arrived:
        meet(request.op, context)
    elif request.op == "test::hang":
        hang(context)
    elif request.op == "test::hangs":
        with meeting:
            counts = [hangs["started"], hangs["cancelled"]]
        outputs.append(pb2.Value(int_list=pb2.IntList(values=counts)))
    elif request.op != "test::nothing":
        context.abort(grpc.StatusCode.NOT_FOUND,
                      f"operator {request.op!r} is not served")
    timing = pb2.Timing(device=request.device or "cpu")
    return pb2.CallResponse(outputs=outputs, timing=timing)


def list_operators(request, context):
    return LISTING


def main() -> None:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8), options=[
        ("grpc.max_receive_message_length", 64 << 20),
        ("grpc.max_send_message_length", 64 << 20)])
    server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler(
        "myops.v1.Myops", {
            "Call": grpc.unary_unary_rpc_method_handler(
                call, request_deserializer=pb2.CallRequest.FromString,
                response_serializer=pb2.CallResponse.SerializeToString),
            "ListOperators": grpc.unary_unary_rpc_method_handler(
                list_operators,
                request_deserializer=pb2.ListOperatorsRequest.FromString,
                response_serializer=pb2.ListOperatorsResponse.SerializeToString),
        })])
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(f"listening on 127.0.0.1:{port}", flush=True)
    sys.stdin.read()  # until the test closes our stdin
    server.stop(grace=None)


if __name__ == "__main__":
    main()
