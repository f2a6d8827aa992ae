"""The Open Inference Protocol's gRPC binding (inference.GRPCInferenceService) against
the real server, with tritonclient.grpc, a client nobody here wrote: health, server and
model metadata, ModelInfer on served operators (raw and typed contents, scalar
arguments as inputs and as parameters, output selection) compared with local torch
calls, and the errors' codes and messages."""

from __future__ import annotations

import grpc
import numpy as np
import pytest
import torch

import tritonclient.grpc as grpcclient
from tritonclient.grpc import model_config_pb2, service_pb2, service_pb2_grpc
from tritonclient.utils import InferenceServerException

SCALE_SHIFT = "myops::scale_shift"
MINMAX = "myops_test::minmax"


def tensor(name: str, array: np.ndarray, datatype: str) -> grpcclient.InferInput:
    t = grpcclient.InferInput(name, list(array.shape), datatype)
    t.set_data_from_numpy(array)
    return t


def error(call) -> InferenceServerException:
    with pytest.raises(InferenceServerException) as raised:
        call()
    return raised.value


def test_server_live_and_ready(client):
    assert client.is_server_live()
    assert client.is_server_ready()


def test_model_ready(client):
    assert client.is_model_ready(SCALE_SHIFT)
    assert client.is_model_ready(SCALE_SHIFT, "1")
    assert not client.is_model_ready(SCALE_SHIFT, "2")
    assert not client.is_model_ready("myops::no_such_op")
    # Listed but not served (it writes into its argument): not a model.
    assert not client.is_model_ready("myops_test::bump_")


def test_server_metadata(client):
    meta = client.get_server_metadata()
    assert meta.name == "myops"
    assert meta.version  # the server's version string
    assert sorted(meta.extensions) == ["classification", "model_configuration", "model_repository",
                                       "parameters",
                                       "statistics"]


def test_model_metadata_scale_shift(client):
    meta = client.get_model_metadata(SCALE_SHIFT)
    assert meta.name == SCALE_SHIFT
    assert list(meta.versions) == ["1"]
    inputs = [(t.name, t.datatype, list(t.shape)) for t in meta.inputs]
    assert inputs == [("x", "FP32", [-1]), ("alpha", "FP64", [1]), ("beta", "FP64", [1])]
    outputs = [(t.name, t.datatype, list(t.shape)) for t in meta.outputs]
    assert outputs == [("output__0", "FP32", [-1])]


def test_model_config(client):
    config = client.get_model_config("myops_test::add3").config
    assert config.name == "myops_test::add3" and config.max_batch_size == 0
    assert config.platform == "pytorch_libtorch" and config.backend == "pytorch"
    inputs = [(i.name, model_config_pb2.DataType.Name(i.data_type), list(i.dims), i.optional)
              for i in config.input]
    assert inputs == [("a", "TYPE_FP32", [-1], False), ("b", "TYPE_FP32", [-1], False),
                      ("c", "TYPE_FP32", [-1], True), ("alpha", "TYPE_FP64", [1], True)]
    assert [(o.name, list(o.dims)) for o in config.output] == [("output__0", [-1])]
    assert not config.HasField("dynamic_batching")
    e = error(lambda: client.get_model_config("myops::nope"))
    assert e.status() == "StatusCode.NOT_FOUND"


def test_model_metadata_named_returns(client):
    meta = client.get_model_metadata(MINMAX, "1")
    assert [t.name for t in meta.inputs] == ["x"]
    assert [t.name for t in meta.outputs] == ["min", "max"]


@pytest.mark.parametrize("dtype,datatype", [(np.float32, "FP32"), (np.float64, "FP64")])
def test_infer_scale_shift_scalars_as_inputs(client, dtype, datatype):
    x = np.arange(-6, 6, dtype=dtype).reshape(3, 4) / 3
    inputs = [tensor("x", x, datatype),
              tensor("alpha", np.array([2.5], dtype=np.float64), "FP64"),
              tensor("beta", np.array(-1.0, dtype=np.float32), "FP32")]  # 0-d works too
    result = client.infer(SCALE_SHIFT, inputs, request_id="req-7")
    out = result.as_numpy("output__0")
    assert out.dtype == dtype and out.shape == (3, 4)
    want = torch.ops.aten.add(torch.from_numpy(x) * 2.5, -1.0).numpy()
    np.testing.assert_allclose(out, want, rtol=1e-6)
    response = result.get_response()
    assert response.id == "req-7"
    assert response.model_name == SCALE_SHIFT and response.model_version == "1"
    assert [o.datatype for o in response.outputs] == [datatype]


@pytest.mark.parametrize("dtype,datatype", [(np.float32, "FP32"), (np.float64, "FP64")])
def test_infer_scale_shift_scalars_as_parameters(client, dtype, datatype):
    x = np.linspace(-1, 1, 17, dtype=dtype)
    result = client.infer(SCALE_SHIFT, [tensor("x", x, datatype)],
                          parameters={"alpha": 3.0, "beta": 2, "unrelated": "ignored"})
    np.testing.assert_allclose(result.as_numpy("output__0"), x * 3 + 2, rtol=1e-6)


def test_infer_multi_output_and_selection(client):
    x = np.array([[3.5, -2.0], [7.25, 0.5]], dtype=np.float32)
    result = client.infer(MINMAX, [tensor("x", x, "FP32")])
    lo, hi = torch.ops.aten.aminmax(torch.from_numpy(x))
    assert result.as_numpy("min").shape == ()
    assert result.as_numpy("min") == lo.numpy() and result.as_numpy("max") == hi.numpy()
    # `outputs` selects and orders them.
    result = client.infer(MINMAX, [tensor("x", x, "FP32")],
                          outputs=[grpcclient.InferRequestedOutput("max")])
    response = result.get_response()
    assert [o.name for o in response.outputs] == ["max"]
    assert len(response.raw_output_contents) == 1
    assert result.as_numpy("max") == np.float32(7.25)


def test_infer_scalar_result_and_defaults(client):
    x = np.array([1, 5, 9, 2], dtype=np.float32)
    # count_above(Tensor x, Scalar threshold) -> int: the threshold as an INT64 input.
    result = client.infer("myops_test::count_above",
                          [tensor("x", x, "FP32"), tensor("threshold", np.array([2]), "INT64")])
    assert result.get_response().outputs[0].datatype == "INT64"
    assert list(result.as_numpy("output__0")) == [2]
    # add3(a, b, c=None, *, alpha=1.0): c and alpha take their defaults, then alpha given.
    a, b = np.ones(3, dtype=np.float32), np.arange(3, dtype=np.float32)
    out = client.infer("myops_test::add3", [tensor("a", a, "FP32"), tensor("b", b, "FP32")])
    np.testing.assert_array_equal(out.as_numpy("output__0"), a + b)
    out = client.infer("myops_test::add3", [tensor("a", a, "FP32"), tensor("b", b, "FP32")],
                       parameters={"alpha": 0.5})
    np.testing.assert_array_equal(out.as_numpy("output__0"), a + b * 0.5)


def test_infer_typed_contents(kserve_server):
    """Typed contents (fp32_contents) instead of raw: tritonclient sends raw only, so the
    request is built from its generated messages."""
    request = service_pb2.ModelInferRequest(model_name=SCALE_SHIFT, id="typed")
    x = request.inputs.add(name="x", datatype="FP32", shape=[2, 2])
    x.contents.fp32_contents.extend([1.0, 2.0, 3.0, 4.0])
    request.parameters["alpha"].double_param = 2.0
    beta = request.inputs.add(name="beta", datatype="INT64", shape=[1])
    beta.contents.int64_contents.append(1)
    with grpc.insecure_channel(kserve_server.address) as channel:
        stub = service_pb2_grpc.GRPCInferenceServiceStub(channel)
        response = stub.ModelInfer(request, timeout=60)
        assert response.id == "typed"
        out = np.frombuffer(response.raw_output_contents[0], dtype=np.float32)
        np.testing.assert_array_equal(out, [3, 5, 7, 9])
        assert list(response.outputs[0].shape) == [2, 2]
        # Raw and typed contents in one request: refused.
        request.raw_input_contents.append(np.zeros(4, np.float32).tobytes())
        with pytest.raises(grpc.RpcError) as raised:
            stub.ModelInfer(request, timeout=60)
        assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "typed contents in a request with raw_input_contents" in raised.value.details()


def test_error_unknown_model(client):
    e = error(lambda: client.infer("myops::nope", [tensor("x", np.ones(2, np.float32), "FP32")]))
    assert e.status() == "StatusCode.NOT_FOUND"
    assert "unknown model 'myops::nope'" in e.message()
    e = error(lambda: client.get_model_metadata("torchvision.nms"))
    assert e.status() == "StatusCode.NOT_FOUND"
    e = error(lambda: client.get_model_metadata(SCALE_SHIFT, "2"))
    assert e.status() == "StatusCode.NOT_FOUND"
    assert "has no version '2'" in e.message()


def test_error_missing_input(client):
    e = error(lambda: client.infer(SCALE_SHIFT, [tensor("x", np.ones(2, np.float32), "FP32")],
                                   parameters={"alpha": 1.0}))
    assert e.status() == "StatusCode.INVALID_ARGUMENT"
    assert "myops::scale_shift() is missing required argument 'beta'" in e.message()


def test_error_unknown_input_and_output(client):
    x = tensor("x", np.ones(2, np.float32), "FP32")
    e = error(lambda: client.infer(MINMAX, [x, tensor("y", np.ones(2, np.float32), "FP32")]))
    assert e.status() == "StatusCode.INVALID_ARGUMENT"
    assert "unexpected keyword argument 'y'" in e.message()
    e = error(lambda: client.infer(MINMAX, [x], outputs=[grpcclient.InferRequestedOutput("mid")]))
    assert e.status() == "StatusCode.INVALID_ARGUMENT"
    assert "has no output 'mid' (outputs: min, max)" in e.message()


def test_error_wrong_datatype(client):
    x = tensor("x", np.ones(2, np.float32), "FP32")
    # A bool for a float argument.
    e = error(lambda: client.infer(SCALE_SHIFT, [x, tensor("alpha", np.array([True]), "BOOL")],
                                   parameters={"beta": 1.0}))
    assert e.status() == "StatusCode.INVALID_ARGUMENT"
    assert "input 'alpha' of model myops::scale_shift is BOOL; argument 'alpha' (float)" \
        in e.message()
    # A scalar argument with more than one element.
    e = error(lambda: client.infer(SCALE_SHIFT, [x, tensor("alpha", np.ones(3), "FP64")],
                                   parameters={"beta": 1.0}))
    assert "has 3 elements (shape [3]); argument 'alpha' (float) takes one" in e.message()
    # A datatype the protocol does not define (or myops does not carry).
    bad = grpcclient.InferInput("x", [2], "FP8")
    bad.set_data_from_numpy  # noqa: B018 -- raw bytes set by hand below
    bad._raw_content = np.ones(2, np.uint8).tobytes()
    e = error(lambda: client.infer(SCALE_SHIFT, [bad], parameters={"alpha": 1.0, "beta": 1.0}))
    assert e.status() == "StatusCode.INVALID_ARGUMENT"
    assert "input 'x' of model myops::scale_shift has datatype 'FP8'; expected one of" \
        in e.message()
    # Raw contents that do not match the shape.
    short = grpcclient.InferInput("x", [4], "FP32")
    short._raw_content = np.ones(3, np.float32).tobytes()
    e = error(lambda: client.infer(SCALE_SHIFT, [short], parameters={"alpha": 1.0, "beta": 1.0}))
    assert "has 12 bytes of raw contents but shape [4] of FP32 needs exactly 16" in e.message()
    # A BOOL tensor whose bytes are not 0 or 1.
    flags = grpcclient.InferInput("x", [3], "BOOL")
    flags._raw_content = bytes([0, 1, 2])
    e = error(lambda: client.infer(MINMAX, [flags]))
    assert "input 'x' of model myops_test::minmax is BOOL with a byte other than 0 or 1" \
        in e.message()
    # A parameter naming a tensor argument.
    e = error(lambda: client.infer(MINMAX, [], parameters={"x": 1.0}))
    assert "parameter 'x' of model myops_test::minmax is a tensor argument" in e.message()


@pytest.mark.parametrize("datatype", ["BOOL", "UINT8", "INT8", "INT16", "INT32", "INT64",
                                      "FP16", "FP32", "FP64", "BF16"])
def test_infer_every_datatype(client, datatype):
    """minmax on a tensor of each datatype, raw contents in and out, against torch."""
    import ml_dtypes
    np_dtype = {"BOOL": np.bool_, "UINT8": np.uint8, "INT8": np.int8, "INT16": np.int16,
                "INT32": np.int32, "INT64": np.int64, "FP16": np.float16, "FP32": np.float32,
                "FP64": np.float64, "BF16": ml_dtypes.bfloat16}[datatype]
    x = np.array([[3, 0, 7], [1, 5, 2]]).astype(np_dtype)
    t = grpcclient.InferInput("x", list(x.shape), datatype)
    if datatype == "BF16":  # tritonclient's numpy path has no bfloat16: raw bytes by hand
        t._raw_content = x.tobytes()
    else:
        t.set_data_from_numpy(x)
    response = client.infer(MINMAX, [t]).get_response()
    assert [o.datatype for o in response.outputs] == [datatype, datatype]
    assert [list(o.shape) for o in response.outputs] == [[], []]
    as_torch = torch.from_numpy(x.view(np.int16)).view(torch.bfloat16) \
        if datatype == "BF16" else torch.from_numpy(x)
    lo, hi = as_torch.min(), as_torch.max()  # what minmax computes, locally
    for raw, want in zip(response.raw_output_contents, (lo, hi)):
        got = np.frombuffer(raw, dtype=np_dtype)
        assert got.shape == (1,)
        assert got[0] == want.float().item() if datatype == "BF16" else got[0] == want.item()


def test_infer_narrow_typed_contents(kserve_server):
    """INT8 and UINT8 tensors in 32-bit typed contents (int_contents, uint_contents)."""
    with grpc.insecure_channel(kserve_server.address) as channel:
        stub = service_pb2_grpc.GRPCInferenceServiceStub(channel)
        for datatype, field, values in (("INT8", "int_contents", [-7, 100, 3]),
                                        ("UINT8", "uint_contents", [200, 1, 9])):
            request = service_pb2.ModelInferRequest(model_name=MINMAX)
            x = request.inputs.add(name="x", datatype=datatype, shape=[3])
            getattr(x.contents, field).extend(values)
            response = stub.ModelInfer(request, timeout=60)
            dtype = np.int8 if datatype == "INT8" else np.uint8
            got = [np.frombuffer(r, dtype=dtype)[0] for r in response.raw_output_contents]
            assert got == [min(values), max(values)]


def test_request_head_is_bounded(kserve_server, client):
    """Fields other than tensor contents are bounded (64 KiB) before protobuf parses them:
    100k empty inputs (2 bytes each on the wire, far more once parsed) are refused, while
    large raw and typed contents are not part of the head."""
    crafted = b"\x0a\x12" + SCALE_SHIFT.encode() + b"\x2a\x00" * 100_000
    with grpc.insecure_channel(kserve_server.address) as channel:
        infer = channel.unary_unary("/inference.GRPCInferenceService/ModelInfer")
        with pytest.raises(grpc.RpcError) as raised:
            infer(crafted, timeout=60)
        assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "fields other than tensor contents take more than 65536 bytes" \
            in raised.value.details()
        request = service_pb2.ModelInferRequest(model_name=SCALE_SHIFT)
        x = request.inputs.add(name="x", datatype="FP32", shape=[100_000])
        x.contents.fp32_contents.extend(np.arange(100_000, dtype=np.float32))
        request.parameters["alpha"].double_param = 1.0
        request.parameters["beta"].double_param = 1.0
        response = service_pb2_grpc.GRPCInferenceServiceStub(channel).ModelInfer(request,
                                                                                 timeout=60)
        np.testing.assert_array_equal(
            np.frombuffer(response.raw_output_contents[0], np.float32),
            np.arange(100_000, dtype=np.float32) + 1)
    big = np.full(1 << 20, 2.0, dtype=np.float32)  # 4 MiB of raw contents
    out = client.infer(SCALE_SHIFT, [tensor("x", big, "FP32")],
                       parameters={"alpha": 0.5, "beta": 0.0})
    np.testing.assert_array_equal(out.as_numpy("output__0"), np.ones(1 << 20, np.float32))


def test_stream_infer(kserve_server):
    """ModelStreamInfer (start_stream / async_stream_infer): every request answered with
    its id; a failed one as an error in the stream, which goes on."""
    import queue
    answers: queue.Queue = queue.Queue()
    stream_client = grpcclient.InferenceServerClient(kserve_server.address)
    stream_client.start_stream(callback=lambda result, error: answers.put((result, error)))
    xs = {}
    try:
        for i in range(8):
            xs[f"r{i}"] = np.full(5, i, dtype=np.float32)
            stream_client.async_stream_infer(SCALE_SHIFT, [tensor("x", xs[f"r{i}"], "FP32")],
                                             request_id=f"r{i}",
                                             parameters={"alpha": 2.0, "beta": 1.0})
        stream_client.async_stream_infer(SCALE_SHIFT, [tensor("x", xs["r0"], "FP32")],
                                         request_id="bad", parameters={"alpha": 2.0})
        stream_client.async_stream_infer(MINMAX, [tensor("x", xs["r3"], "FP32")],
                                         request_id="after")
        got, errors = {}, []
        for _ in range(10):
            result, error = answers.get(timeout=120)
            if error is not None:
                errors.append(error)
            else:
                got[result.get_response().id] = result
    finally:
        stream_client.stop_stream()
        stream_client.close()
    assert len(errors) == 1
    assert "INVALID_ARGUMENT: myops::scale_shift() is missing required argument 'beta'" \
        in errors[0].message()
    assert sorted(got) == sorted([*xs, "after"])
    for rid, x in xs.items():
        np.testing.assert_array_equal(got[rid].as_numpy("output__0"), x * 2 + 1)
    assert got["after"].as_numpy("max") == np.float32(3)


def test_every_stream_response_is_marked_final_as_on_triton(kserve_server):
    """Triton marks a request's last stream response with the parameter
    triton_final_response (clients of decoupled models read until it); each request here
    has one response, final, errors included, and asking for an empty final response
    (triton_enable_empty_final_response) adds none, as Triton does for such models."""
    def request(rid, empty_final, beta=True):
        r = service_pb2.ModelInferRequest(model_name=SCALE_SHIFT, id=rid)
        r.inputs.add(name="x", datatype="FP32", shape=[2])
        r.raw_input_contents.append(np.ones(2, np.float32).tobytes())
        r.parameters["alpha"].double_param = 2.0
        if beta:
            r.parameters["beta"].double_param = 1.0
        if empty_final:
            r.parameters["triton_enable_empty_final_response"].bool_param = True
        return r

    with grpc.insecure_channel(kserve_server.address) as channel:
        stub = service_pb2_grpc.GRPCInferenceServiceStub(channel)
        requests = [request("a", False), request("b", True), request("bad", True, beta=False)]
        responses = list(stub.ModelStreamInfer(iter(requests), timeout=60))
    by_id = {r.infer_response.id: r for r in responses}  # in the order they completed
    assert len(responses) == 3 and sorted(by_id) == ["a", "b", "bad"]
    for r in responses:
        assert r.infer_response.parameters["triton_final_response"].bool_param is True
    assert {rid: bool(r.error_message) for rid, r in by_id.items()} == {
        "a": False, "b": False, "bad": True}
    assert len(by_id["b"].infer_response.outputs) == 1


def test_async_infer_with_ids(client):
    import queue
    answers: queue.Queue = queue.Queue()
    xs = [np.full(5, i, dtype=np.float32) for i in range(8)]
    for i, x in enumerate(xs):
        client.async_infer(SCALE_SHIFT, [tensor("x", x, "FP32")],
                           callback=lambda result, error: answers.put((result, error)),
                           request_id=f"a{i}", parameters={"alpha": 2.0, "beta": 1.0})
    seen = {}
    for _ in xs:
        result, error = answers.get(timeout=120)
        assert error is None, error
        seen[result.get_response().id] = result.as_numpy("output__0")
    assert sorted(seen) == sorted(f"a{i}" for i in range(8))
    for i, x in enumerate(xs):
        np.testing.assert_array_equal(seen[f"a{i}"], x * 2 + 1)


def test_timeout_parameter(client):
    # tritonclient's timeout= (request parameter "timeout", microseconds from receipt):
    # 1 us has passed before the operator runs, 10 s has not; a negative one is refused.
    x = np.linspace(-1, 1, 8, dtype=np.float32)
    scalars = {"alpha": 2.0, "beta": 1.0}
    e = error(lambda: client.infer(SCALE_SHIFT, [tensor("x", x, "FP32")], parameters=scalars,
                                   timeout=1))
    assert e.status() == "StatusCode.DEADLINE_EXCEEDED"
    assert "the deadline passed before the request ran" in e.message()
    result = client.infer(SCALE_SHIFT, [tensor("x", x, "FP32")], parameters=scalars,
                          timeout=10_000_000)
    np.testing.assert_allclose(result.as_numpy("output__0"), x * 2 + 1, rtol=1e-6)
    # The largest timeout is no bound at all (not an overflow into the past).
    result = client.infer(SCALE_SHIFT, [tensor("x", x, "FP32")], parameters=scalars,
                          timeout=2**63 - 1)
    np.testing.assert_allclose(result.as_numpy("output__0"), x * 2 + 1, rtol=1e-6)
    e = error(lambda: client.infer(SCALE_SHIFT, [tensor("x", x, "FP32")], parameters=scalars,
                                   timeout=-5))
    assert e.status() == "StatusCode.INVALID_ARGUMENT"
    assert ("parameter 'timeout' of model myops::scale_shift is the request's timeout in "
            "microseconds; expected an integer >= 0") in e.message()
