"""Tensor[] arguments and Tensor[] / optional returns over the Open Inference Protocol,
with tritonclient.grpc against the real server and the test operator library: a
Tensor[] argument `xs` as inputs xs__0, xs__1, ...; a Tensor[] return as outputs
<name>__0, <name>__1, ... (selectable whole or by element); a None optional return left
out of the response. Results equal local torch calls."""

from __future__ import annotations

import grpc
import numpy as np
import pytest
import torch

import tritonclient.grpc as grpcclient
from tritonclient.grpc import service_pb2, service_pb2_grpc
from tritonclient.utils import InferenceServerException

CHUNKS = "myops_test::chunks"  # chunks(Tensor x, int n) -> Tensor[]
STACK_ALL = "myops_test::stack_all"  # stack_all(Tensor[] xs, int dim=0) -> Tensor
MAYBE = "myops_test::maybe"  # maybe(Tensor x, bool give) -> Tensor?


def tensor(name: str, array: np.ndarray, datatype: str) -> grpcclient.InferInput:
    t = grpcclient.InferInput(name, list(array.shape), datatype)
    t.set_data_from_numpy(array)
    return t


def error(call) -> InferenceServerException:
    with pytest.raises(InferenceServerException) as raised:
        call()
    return raised.value


def test_tensor_list_argument_as_numbered_inputs(kserve_server, client):
    xs = [np.arange(6, dtype=np.float64).reshape(2, 3) + 10 * k for k in range(3)]
    # Any order in the request: the numbers say the list's order.
    inputs = [tensor(f"xs__{k}", xs[k], "FP64") for k in (2, 0, 1)]
    result = client.infer(STACK_ALL, inputs, parameters={"dim": 1})
    want = torch.ops.aten.stack([torch.from_numpy(x) for x in xs], 1).numpy()
    out = result.as_numpy("output__0")
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out, want)

    # The dim default (0), and typed contents for the elements (tritonclient sends raw
    # only: the request is built from its generated messages).
    request = service_pb2.ModelInferRequest(model_name=STACK_ALL)
    for k in (1, 0):
        element = request.inputs.add(name=f"xs__{k}", datatype="INT16", shape=[2])
        element.contents.int_contents.extend([k, -k])
    with grpc.insecure_channel(kserve_server.address) as channel:
        response = service_pb2_grpc.GRPCInferenceServiceStub(channel).ModelInfer(request,
                                                                                  timeout=60)
    assert response.outputs[0].datatype == "INT16"
    assert list(response.outputs[0].shape) == [2, 2]
    out = np.frombuffer(response.raw_output_contents[0], dtype=np.int16).reshape(2, 2)
    np.testing.assert_array_equal(out, [[0, 0], [1, -1]])


def test_tensor_list_argument_errors(client):
    x = np.ones(2, dtype=np.float32)
    gap = error(lambda: client.infer(STACK_ALL, [tensor("xs__0", x, "FP32"),
                                                  tensor("xs__2", x, "FP32")]))
    assert gap.status() == "StatusCode.INVALID_ARGUMENT"
    assert "are xs__0, xs__2; they must be numbered from xs__0 on" in gap.message()
    whole = error(lambda: client.infer(STACK_ALL, [tensor("xs", x, "FP32")]))
    assert "is sent as one input per element, xs__0, xs__1, ..." in whole.message()
    missing = error(lambda: client.infer(STACK_ALL, [], parameters={"dim": 0}))
    assert "missing required argument 'xs'" in missing.message()
    wrong = error(lambda: client.infer(STACK_ALL, [tensor("xs__0", x, "FP32"),
                                                    tensor("xs__1", np.ones(3, np.float32),
                                                           "FP32")]))
    # The elements reach the op in order: its own error names entries 0 and 1.
    assert wrong.status() == "StatusCode.INVALID_ARGUMENT"
    assert "stack expects each tensor to be equal size, but got [2] at entry 0 and [3] " \
        "at entry 1" in wrong.message()


def test_tensor_list_metadata(client):
    meta = client.get_model_metadata(STACK_ALL)
    assert [(t.name, t.datatype, list(t.shape)) for t in meta.inputs] == \
        [("xs__0", "FP32", [-1]), ("dim", "INT64", [1])]
    meta = client.get_model_metadata(CHUNKS)
    assert [(t.name, t.datatype, list(t.shape)) for t in meta.outputs] == \
        [("output__0", "FP32", [-1])]
    config = client.get_model_config(STACK_ALL).config
    assert [(i.name, i.optional) for i in config.input] == [("xs__0", False), ("dim", True)]


def test_tensor_list_return_as_numbered_outputs(client):
    x = np.arange(10, dtype=np.float32)
    result = client.infer(CHUNKS, [tensor("x", x, "FP32")], parameters={"n": 3})
    want = [t.numpy() for t in torch.ops.aten.chunk(torch.from_numpy(x), 3)]
    response = result.get_response()
    assert [o.name for o in response.outputs] == ["output__0__0", "output__0__1", "output__0__2"]
    assert len(response.raw_output_contents) == 3
    for k, w in enumerate(want):
        np.testing.assert_array_equal(result.as_numpy(f"output__0__{k}"), w)
    # The whole list by its metadata name, or elements by theirs, in the order asked.
    whole = client.infer(CHUNKS, [tensor("x", x, "FP32")], parameters={"n": 3},
                         outputs=[grpcclient.InferRequestedOutput("output__0")])
    assert [o.name for o in whole.get_response().outputs] == \
        ["output__0__0", "output__0__1", "output__0__2"]
    picked = client.infer(CHUNKS, [tensor("x", x, "FP32")], parameters={"n": 3},
                          outputs=[grpcclient.InferRequestedOutput("output__0__2"),
                                   grpcclient.InferRequestedOutput("output__0__0")])
    assert [o.name for o in picked.get_response().outputs] == ["output__0__2", "output__0__0"]
    np.testing.assert_array_equal(picked.as_numpy("output__0__2"), want[2])
    np.testing.assert_array_equal(picked.as_numpy("output__0__0"), want[0])


def test_tensor_list_return_errors_and_empty(client):
    x = np.arange(4, dtype=np.float32)
    beyond = error(lambda: client.infer(
        CHUNKS, [tensor("x", x, "FP32")], parameters={"n": 2},
        outputs=[grpcclient.InferRequestedOutput("output__0__5")]))
    assert beyond.status() == "StatusCode.INVALID_ARGUMENT"
    assert "output 'output__0__5' was requested, but myops_test::chunks returned 2 tensors" \
        in beyond.message()
    twice = error(lambda: client.infer(
        CHUNKS, [tensor("x", x, "FP32")], parameters={"n": 2},
        outputs=[grpcclient.InferRequestedOutput("output__0"),
                 grpcclient.InferRequestedOutput("output__0__1")]))
    assert "requested twice" in twice.message()
    # An empty list: a response without outputs.
    empty = client.infer(CHUNKS, [tensor("x", np.zeros(0, np.float32), "FP32")],
                         parameters={"n": 2})
    expect = len(torch.ops.aten.chunk(torch.zeros(0), 2))
    assert len(empty.get_response().outputs) == expect


def test_optional_return(client):
    x = np.array([1.5, -2.0], dtype=np.float32)
    given = client.infer(MAYBE, [tensor("x", x, "FP32")], parameters={"give": True})
    np.testing.assert_array_equal(given.as_numpy("output__0"), x * 2)
    # None: left out of the response, also when asked for by name.
    for outputs in (None, [grpcclient.InferRequestedOutput("output__0")]):
        none = client.infer(MAYBE, [tensor("x", x, "FP32")], parameters={"give": False},
                            outputs=outputs)
        response = none.get_response()
        assert len(response.outputs) == 0 and len(response.raw_output_contents) == 0
        assert none.as_numpy("output__0") is None


def test_lists_through_the_stream(kserve_server):
    import queue
    answers: queue.Queue = queue.Queue()
    c = grpcclient.InferenceServerClient(kserve_server.address)
    c.start_stream(callback=lambda result, error: answers.put((result, error)))
    try:
        x = np.arange(6, dtype=np.float32)
        c.async_stream_infer(CHUNKS, [tensor("x", x, "FP32")], parameters={"n": 2},
                             request_id="chunks")
        result, err = answers.get(timeout=120)
    finally:
        c.stop_stream()
        c.close()
    assert err is None
    np.testing.assert_array_equal(result.as_numpy("output__0__1"), [3, 4, 5])


def test_lists_over_rest(http_client):
    """The same mapping over the HTTP/REST binding (frontends/oip/args.h: one set of rules)."""
    import tritonclient.http as httpclient

    def rest_tensor(name, array, datatype):
        t = httpclient.InferInput(name, list(array.shape), datatype)
        t.set_data_from_numpy(array, binary_data=False)
        return t

    xs = [np.arange(3, dtype=np.float32) + 10 * k for k in range(2)]
    out = http_client.infer(STACK_ALL, [rest_tensor("xs__1", xs[1], "FP32"),
                                        rest_tensor("xs__0", xs[0], "FP32")])
    np.testing.assert_array_equal(out.as_numpy("output__0"), np.stack(xs))
    x = np.arange(6, dtype=np.float32)
    chunks = http_client.infer(CHUNKS, [rest_tensor("x", x, "FP32")], parameters={"n": 3})
    names = [o["name"] for o in chunks.get_response()["outputs"]]
    assert names == ["output__0__0", "output__0__1", "output__0__2"]
    np.testing.assert_array_equal(chunks.as_numpy("output__0__2"), [4, 5])
    none = http_client.infer(MAYBE, [rest_tensor("x", x, "FP32")], parameters={"give": False})
    assert none.get_response()["outputs"] == [] or "outputs" not in none.get_response()
