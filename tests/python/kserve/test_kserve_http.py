"""The Open Inference Protocol's HTTP/REST binding (--http-address) against the real
server, with tritonclient.http, a client nobody here wrote: health, server and model
metadata, configuration, infer and async_infer with JSON and binary tensor data, every
datatype, scalar arguments as inputs and as parameters, multi-output operators, results
compared with local torch calls, and the errors' HTTP statuses and messages (the same
messages the gRPC binding gives)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import numpy as np
import pytest
import torch

import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

SCALE_SHIFT = "myops::scale_shift"
MINMAX = "myops_test::minmax"


def tensor(name: str, array: np.ndarray, datatype: str, binary: bool = True):
    t = httpclient.InferInput(name, list(array.shape), datatype)
    t.set_data_from_numpy(array, binary_data=binary)
    return t


def error(call) -> InferenceServerException:
    with pytest.raises(InferenceServerException) as raised:
        call()
    return raised.value


def post(server, path: str, body: bytes, headers: dict | None = None):
    """(status, parsed JSON) of a raw POST: for requests tritonclient cannot make."""
    request = urllib.request.Request(f"http://{server.http_address}{path}", data=body,
                                     headers=headers or {}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_server_live_ready_and_metadata(http_client):
    assert http_client.is_server_live() and http_client.is_server_ready()
    meta = http_client.get_server_metadata()
    assert meta["name"] == "myops" and meta["version"]
    assert sorted(meta["extensions"]) == ["binary_tensor_data", "classification",
                                          "model_configuration", "model_repository",
                                          "parameters", "statistics"]


def test_model_ready(http_client):
    assert http_client.is_model_ready(SCALE_SHIFT)
    assert http_client.is_model_ready(SCALE_SHIFT, "1")
    assert not http_client.is_model_ready(SCALE_SHIFT, "2")
    assert not http_client.is_model_ready("myops::no_such_op")
    assert not http_client.is_model_ready("myops_test::bump_")  # listed, not served


def test_model_metadata_and_config(http_client):
    meta = http_client.get_model_metadata(SCALE_SHIFT)
    assert meta["name"] == SCALE_SHIFT and meta["versions"] == ["1"]
    assert [(t["name"], t["datatype"], t["shape"]) for t in meta["inputs"]] == \
        [("x", "FP32", [-1]), ("alpha", "FP64", [1]), ("beta", "FP64", [1])]
    assert [(t["name"], t["datatype"]) for t in meta["outputs"]] == [("output__0", "FP32")]
    assert [t["name"] for t in http_client.get_model_metadata(MINMAX, "1")["outputs"]] == \
        ["min", "max"]
    config = http_client.get_model_config("myops_test::add3")
    assert config["name"] == "myops_test::add3" and config["max_batch_size"] == 0
    assert config["platform"] == "pytorch_libtorch" and config["backend"] == "pytorch"
    assert [(i["name"], i["data_type"], i["dims"], i["optional"]) for i in config["input"]] == \
        [("a", "TYPE_FP32", [-1], False), ("b", "TYPE_FP32", [-1], False),
         ("c", "TYPE_FP32", [-1], True), ("alpha", "TYPE_FP64", [1], True)]
    assert [(o["name"], o["dims"]) for o in config["output"]] == [("output__0", [-1])]
    e = error(lambda: http_client.get_model_config("myops::nope"))
    assert e.status() == "404" and "unknown model 'myops::nope'" in e.message()


@pytest.mark.parametrize("binary_in", [True, False])
@pytest.mark.parametrize("binary_out", [True, False])
def test_infer_scalars_as_inputs(http_client, binary_in, binary_out):
    x = np.arange(-6, 6, dtype=np.float32).reshape(3, 4) / 3
    inputs = [tensor("x", x, "FP32", binary_in),
              tensor("alpha", np.array([2.5]), "FP64", binary_in),
              tensor("beta", np.array(-1.0, dtype=np.float32), "FP32", binary_in)]  # 0-d
    result = http_client.infer(SCALE_SHIFT, inputs, request_id="req-7",
                               outputs=[httpclient.InferRequestedOutput("output__0",
                                                                        binary_data=binary_out)])
    want = torch.ops.aten.add(torch.from_numpy(x) * 2.5, -1.0).numpy()
    out = result.as_numpy("output__0")
    assert out.dtype == np.float32 and out.shape == (3, 4)
    np.testing.assert_allclose(out, want, rtol=1e-6)
    response = result.get_response()
    assert response["id"] == "req-7" and response["model_name"] == SCALE_SHIFT
    assert response["model_version"] == "1"
    assert ("parameters" in response["outputs"][0]) == binary_out
    assert ("data" in response["outputs"][0]) == (not binary_out)


@pytest.mark.parametrize("dtype,datatype", [(np.float32, "FP32"), (np.float64, "FP64")])
def test_infer_scalars_as_parameters(http_client, dtype, datatype):
    x = np.linspace(-1, 1, 17, dtype=dtype)
    result = http_client.infer(SCALE_SHIFT, [tensor("x", x, datatype)],
                               parameters={"alpha": 3.0, "beta": 2, "unrelated": "ignored"})
    np.testing.assert_allclose(result.as_numpy("output__0"), x * 3 + 2, rtol=1e-6)


def test_async_infer(http_client):
    xs = [np.full(5, i, dtype=np.float32) for i in range(6)]
    pending = [http_client.async_infer(SCALE_SHIFT, [tensor("x", x, "FP32")],
                                       request_id=f"r{i}", parameters={"alpha": 2.0, "beta": 1.0})
               for i, x in enumerate(xs)]
    for i, (x, p) in enumerate(zip(xs, pending)):
        result = p.get_result()
        assert result.get_response()["id"] == f"r{i}"
        np.testing.assert_array_equal(result.as_numpy("output__0"), x * 2 + 1)


def test_infer_multi_output_selection_and_mixed_encoding(http_client):
    x = np.array([[3.5, -2.0], [7.25, 0.5]], dtype=np.float32)
    lo, hi = torch.ops.aten.aminmax(torch.from_numpy(x))
    result = http_client.infer(MINMAX, [tensor("x", x, "FP32")])
    assert result.as_numpy("min") == lo.numpy() and result.as_numpy("max") == hi.numpy()
    # `outputs` selects and orders them; each chooses JSON or binary data.
    result = http_client.infer(MINMAX, [tensor("x", x, "FP32", binary=False)], outputs=[
        httpclient.InferRequestedOutput("max", binary_data=False),
        httpclient.InferRequestedOutput("min", binary_data=True)])
    outputs = result.get_response()["outputs"]
    assert [o["name"] for o in outputs] == ["max", "min"]
    assert outputs[0]["data"] == [7.25] and outputs[0]["shape"] == []
    assert outputs[1]["parameters"] == {"binary_data_size": 4}
    assert result.as_numpy("min") == np.float32(-2.0)


def test_infer_non_tensor_results_and_defaults(http_client):
    x = np.array([1, 5, 9, 2], dtype=np.float32)
    # count_above(Tensor x, Scalar threshold) -> int, the threshold as an INT64 input.
    result = http_client.infer("myops_test::count_above",
                               [tensor("x", x, "FP32"), tensor("threshold", np.array([2]), "INT64")])
    assert result.get_response()["outputs"][0]["datatype"] == "INT64"
    assert list(result.as_numpy("output__0")) == [2]
    # describe(Tensor x, str prefix, bool upper=False) -> str: a str parameter, BYTES out.
    result = http_client.infer("myops_test::describe", [tensor("x", x, "FP32")],
                               parameters={"prefix": "t:", "upper": True},
                               outputs=[httpclient.InferRequestedOutput("output__0",
                                                                        binary_data=False)])
    text = result.get_response()["outputs"][0]
    assert text["datatype"] == "BYTES" and text["data"][0].startswith("T:")
    # weighted_sum(float[] weights, ScalarType? dtype=None) -> float: sum(w[i] * (i + 1))
    # of a list input; a ScalarType parameter by datatype name (INT32: truncated).
    weights = tensor("weights", np.array([0.5, 1.5, 2.0]), "FP64", False)
    result = http_client.infer("myops_test::weighted_sum", [weights])
    assert result.as_numpy("output__0").tolist() == [9.5]
    result = http_client.infer("myops_test::weighted_sum", [weights],
                               parameters={"dtype": "INT32"})
    assert result.as_numpy("output__0").tolist() == [9.0]
    # add3(a, b, c=None, *, alpha=1.0): defaults, then alpha as a parameter.
    a, b = np.ones(3, dtype=np.float32), np.arange(3, dtype=np.float32)
    out = http_client.infer("myops_test::add3", [tensor("a", a, "FP32"), tensor("b", b, "FP32")],
                            parameters={"alpha": 0.5})
    np.testing.assert_array_equal(out.as_numpy("output__0"), a + b * 0.5)


@pytest.mark.parametrize("datatype", ["BOOL", "UINT8", "INT8", "INT16", "INT32", "INT64",
                                      "FP16", "FP32", "FP64", "BF16"])
def test_infer_every_datatype(http_client, datatype):
    """minmax on a tensor of each datatype, binary in and out, and JSON in and out where
    the datatype travels as JSON (not FP16/BF16 inputs), against torch."""
    import ml_dtypes
    np_dtype = {"BOOL": np.bool_, "UINT8": np.uint8, "INT8": np.int8, "INT16": np.int16,
                "INT32": np.int32, "INT64": np.int64, "FP16": np.float16, "FP32": np.float32,
                "FP64": np.float64, "BF16": ml_dtypes.bfloat16}[datatype]
    x = np.array([[3, 0, 7], [1, 5, 2]]).astype(np_dtype)
    as_torch = torch.from_numpy(x.view(np.int16)).view(torch.bfloat16) \
        if datatype == "BF16" else torch.from_numpy(x)
    lo, hi = (v.float().item() for v in (as_torch.min(), as_torch.max()))
    for binary in ([True] if datatype in ("FP16", "BF16") else [True, False]):
        result = http_client.infer(MINMAX, [tensor("x", x, datatype, binary)], outputs=[
            httpclient.InferRequestedOutput(n, binary_data=binary) for n in ("min", "max")])
        outputs = result.get_response()["outputs"]
        assert [o["datatype"] for o in outputs] == [datatype, datatype]
        assert [o["shape"] for o in outputs] == [[], []]
        assert [float(result.as_numpy(n).reshape(-1)[0]) for n in ("min", "max")] == [lo, hi]
    if datatype in ("FP16", "BF16"):  # and as JSON numbers out
        result = http_client.infer(MINMAX, [tensor("x", x, datatype)], outputs=[
            httpclient.InferRequestedOutput("max", binary_data=False)])
        assert result.get_response()["outputs"][0]["data"] == [hi]


def test_error_unknown_model_and_version(http_client):
    x = tensor("x", np.ones(2, np.float32), "FP32")
    e = error(lambda: http_client.infer("myops::nope", [x]))
    assert e.status() == "404" and "unknown model 'myops::nope'" in e.message()
    e = error(lambda: http_client.get_model_metadata(SCALE_SHIFT, "2"))
    assert e.status() == "404" and "has no version '2'" in e.message()


def test_error_arguments(http_client):
    x = tensor("x", np.ones(2, np.float32), "FP32")
    e = error(lambda: http_client.infer(SCALE_SHIFT, [x], parameters={"alpha": 1.0}))
    assert e.status() == "400"
    assert "myops::scale_shift() is missing required argument 'beta'" in e.message()
    e = error(lambda: http_client.infer(SCALE_SHIFT, [x, tensor("alpha", np.array([True]),
                                                                "BOOL")],
                                        parameters={"beta": 1.0}))
    assert "input 'alpha' of model myops::scale_shift is BOOL; argument 'alpha' (float)" \
        in e.message()
    e = error(lambda: http_client.infer(MINMAX, [x], outputs=[
        httpclient.InferRequestedOutput("mid")]))
    assert "has no output 'mid' (outputs: min, max)" in e.message()
    e = error(lambda: http_client.infer(MINMAX, [], parameters={"x": 1.0}))
    assert "parameter 'x' of model myops_test::minmax is a tensor argument" in e.message()


def request(datatype="FP32", shape=(2,), data=(1.0, 2.0), **extra):
    body = {"inputs": [{"name": "x", "datatype": datatype, "shape": list(shape),
                        "data": list(data)}],
            "parameters": {"alpha": 2.0, "beta": 1.0}}
    body.update(extra)
    return json.dumps(body).encode()


@pytest.mark.parametrize("body,message", [
    (request(datatype="FP8"), "input 'x' of model myops::scale_shift has datatype 'FP8'; "
                              "expected one of BOOL"),
    (request(shape=(3,)), "input 'x' of model myops::scale_shift has 2 elements in 'data' but "
                          "shape [3] needs 3"),
    (request(shape=(2, -1)), "input 'x' of model myops::scale_shift: shape[1] is -1"),
    (request(data=(1, "a")), "input 'x' of model myops::scale_shift: data[1] is \"a\"; FP32 "
                             "takes numbers"),
    (request(datatype="INT8", data=(1, 300)), "data[1] is 300; INT8 takes integers from -128 "
                                              "to 127"),
    (request(datatype="BOOL", data=(1, 0)), "data[0] is 1; BOOL takes true or false"),
    (request(datatype="FP16"), "input 'x' of model myops::scale_shift is FP16, which travels "
                               "only as binary data"),
    (b'{"inputs": [', "the request body is not valid JSON"),
    (b"[1, 2]", "the request body is not a JSON object"),
    (b"[" * 100 + b"]" * 100, "nests arrays and objects more than 64 deep"),
    (json.dumps({"inputs": {}}).encode(), "has no 'inputs' array"),
    (request(outputs=[{"name": 3}]), "has an output that is not an object with a string 'name'"),
])
def test_error_malformed_json(kserve_server, body, message):
    status, answer = post(kserve_server, f"/v2/models/{SCALE_SHIFT}/infer", body)
    assert status == 400
    assert message in answer["error"]


def test_error_binary_data(kserve_server):
    head = json.dumps({"inputs": [{"name": "x", "datatype": "FP32", "shape": [2],
                                   "parameters": {"binary_data_size": 8}}],
                       "parameters": {"alpha": 2.0, "beta": 1.0}}).encode()
    path = f"/v2/models/{SCALE_SHIFT}/infer"
    data = np.array([1, 2], np.float32).tobytes()
    length = {"Inference-Header-Content-Length": str(len(head))}
    status, answer = post(kserve_server, path, head + data, length)
    assert status == 200 and answer["outputs"][0]["data"] == [3.0, 5.0]
    status, answer = post(kserve_server, path, head + data[:6], length)
    assert status == 400
    assert "has binary_data_size 8 but only 6 bytes of binary data are left" in answer["error"]
    status, answer = post(kserve_server, path, head + data + b"xx", length)
    assert "has 2 bytes of binary data that no input's binary_data_size claims" in answer["error"]
    status, answer = post(kserve_server, path, head + data,
                          {"Inference-Header-Content-Length": str(len(head) + 100)})
    assert status == 400 and "Inference-Header-Content-Length is" in answer["error"]
    bools = json.dumps({"inputs": [{"name": "x", "datatype": "BOOL", "shape": [2],
                                    "parameters": {"binary_data_size": 2}}]}).encode()
    status, answer = post(kserve_server, f"/v2/models/{MINMAX}/infer", bools + b"\x00\x02",
                          {"Inference-Header-Content-Length": str(len(bools))})
    assert status == 400
    assert "is BOOL with a byte other than 0 or 1 in its binary data" in answer["error"]


def test_timeout_parameter(http_client):
    # tritonclient.http's timeout= (parameters.timeout, microseconds from receipt), as on
    # the gRPC binding: 504 once it has passed, 400 for a negative one.
    x = np.linspace(-1, 1, 8, dtype=np.float32)
    scalars = {"alpha": 2.0, "beta": 1.0}
    e = error(lambda: http_client.infer(SCALE_SHIFT, [tensor("x", x, "FP32")],
                                        parameters=scalars, timeout=1))
    assert e.status() == "504" and "the deadline passed before the request ran" in e.message()
    result = http_client.infer(SCALE_SHIFT, [tensor("x", x, "FP32")], parameters=scalars,
                               timeout=10_000_000)
    np.testing.assert_allclose(result.as_numpy("output__0"), x * 2 + 1, rtol=1e-6)
    result = http_client.infer(SCALE_SHIFT, [tensor("x", x, "FP32")], parameters=scalars,
                               timeout=2**64 - 1)  # uint64: no bound either
    np.testing.assert_allclose(result.as_numpy("output__0"), x * 2 + 1, rtol=1e-6)
    e = error(lambda: http_client.infer(SCALE_SHIFT, [tensor("x", x, "FP32")],
                                        parameters=scalars, timeout=-5))
    assert e.status() == "400" and "parameter 'timeout'" in e.message()


def test_compressed_requests_and_responses_as_tritonclient_sends_them(http_client):
    """tritonclient's request_compression_algorithm sends the body gzip- or
    deflate-compressed (Content-Encoding; Inference-Header-Content-Length counts the
    uncompressed JSON); response_compression_algorithm asks for a compressed answer."""
    x = np.arange(1000, dtype=np.float32)
    for request_algo in (None, "gzip", "deflate"):
        for response_algo in (None, "gzip", "deflate"):
            for binary in (True, False):
                inp = httpclient.InferInput("x", list(x.shape), "FP32")
                inp.set_data_from_numpy(x, binary_data=binary)
                out = httpclient.InferRequestedOutput("output__0", binary_data=binary)
                r = http_client.infer(SCALE_SHIFT, [inp], outputs=[out],
                                      parameters={"alpha": 2.0, "beta": 1.0},
                                      request_compression_algorithm=request_algo,
                                      response_compression_algorithm=response_algo)
                np.testing.assert_array_equal(r.as_numpy("output__0"), 2 * x + 1)


def test_hostile_compressed_bodies_get_precise_statuses(kserve_server):
    import gzip
    import zlib

    body = json.dumps({"inputs": [{"name": "x", "shape": [2], "datatype": "FP32",
                                   "data": [1, 2]}],
                       "parameters": {"alpha": 1.0, "beta": 0.0}}).encode()
    path = f"/v2/models/{SCALE_SHIFT}/infer"
    status, _ = post(kserve_server, path, gzip.compress(body), {"Content-Encoding": "gzip"})
    assert status == 200
    status, reply = post(kserve_server, path, b"not gzip at all", {"Content-Encoding": "gzip"})
    assert status == 400 and "not gzip data" in reply["error"], reply
    status, reply = post(kserve_server, path, zlib.compress(body)[:-6],
                         {"Content-Encoding": "deflate"})
    assert status == 400 and "ends before" in reply["error"], reply
    status, reply = post(kserve_server, path, body, {"Content-Encoding": "br"})
    assert status == 415 and "gzip, deflate or identity" in reply["error"], reply
    # A bomb: about 1 MiB that inflates past the server's message limit, refused while
    # inflating, not allocated.
    bomb = gzip.compress(b"\0" * (1 << 30))
    assert len(bomb) < 2 << 20
    status, reply = post(kserve_server, path, bomb, {"Content-Encoding": "gzip"})
    assert status == 413 and "inflates to more than" in reply["error"], reply
