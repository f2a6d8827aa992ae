"""Triton's statistics extension (ModelStatistics) against the real server, with
tritonclient.grpc's get_inference_statistics: per-model counts and durations of the
requests of every front end (KServe ModelInfer and ModelStreamInfer, myops.v1
ScaleShift and Call of the same operator), failures apart, every served model when
none is named, NOT_FOUND for an unknown model; the same over REST (GET
/v2/models[/{name}]/stats, tritonclient.http). Its own server, so counts are exact."""

from __future__ import annotations

import queue
import time

import numpy as np
import pytest

import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException

from myops_testing import BUILD, ServerProcess

TEST_OPS = BUILD / "tests" / "server" / "libmyops_test_ops.so"

SCALE_SHIFT = "myops::scale_shift"
ADD3 = "myops_test::add3"


@pytest.fixture(scope="module")
def server():
    s = ServerProcess("--load-library", str(TEST_OPS), "--ops", "myops::*,myops_test::*",
                      "--http-address", "127.0.0.1:0")
    yield s
    s.close()


@pytest.fixture(scope="module")
def client(server):
    c = grpcclient.InferenceServerClient(server.address)
    yield c
    c.close()


def tensor(name: str, array: np.ndarray, datatype: str) -> grpcclient.InferInput:
    t = grpcclient.InferInput(name, list(array.shape), datatype)
    t.set_data_from_numpy(array)
    return t


def stats_of(client, model: str):
    response = client.get_inference_statistics(model)
    assert len(response.model_stats) == 1
    return response.model_stats[0]


def infer_scale_shift(client, x: np.ndarray):
    return client.infer(SCALE_SHIFT, [tensor("x", x, "FP32")],
                        parameters={"alpha": 2.0, "beta": 1.0})


def test_requests_of_every_front_end_count(server, client):
    import myops_client
    before_ms = int(time.time() * 1000)
    start = stats_of(client, SCALE_SHIFT)
    assert start.name == SCALE_SHIFT and start.version == "1"
    assert start.inference_stats.success.count == 0 and start.last_inference == 0
    x = np.arange(8, dtype=np.float32)
    for _ in range(3):
        infer_scale_shift(client, x)
    answers: queue.Queue = queue.Queue()
    stream = grpcclient.InferenceServerClient(server.address)
    stream.start_stream(callback=lambda result, error: answers.put((result, error)))
    try:
        stream.async_stream_infer(SCALE_SHIFT, [tensor("x", x, "FP32")],
                                  parameters={"alpha": 2.0, "beta": 1.0})
        result, error = answers.get(timeout=120)
        assert error is None
    finally:
        stream.stop_stream()
        stream.close()
    with myops_client.Client(server.address, timeout=60.0) as v1:
        np.testing.assert_array_equal(v1.scale_shift(x, 2.0, 1.0), x * 2 + 1)
        np.testing.assert_array_equal(v1.call(SCALE_SHIFT, x, 2.0, 1.0), x * 2 + 1)
    after_ms = int(time.time() * 1000)

    s = stats_of(client, SCALE_SHIFT)
    i = s.inference_stats
    assert i.success.count == 6  # 3 ModelInfer, 1 ModelStreamInfer, ScaleShift, Call
    assert i.fail.count == 0
    for stage in (i.queue, i.compute_input, i.compute_infer, i.compute_output):
        assert stage.count == 6
    assert s.inference_count == 6 and s.execution_count == 6
    assert 0 < i.compute_infer.ns and 0 < i.compute_input.ns
    # The stages are parts of the requests' total time.
    assert i.queue.ns + i.compute_input.ns + i.compute_infer.ns + i.compute_output.ns \
        <= i.success.ns
    assert before_ms <= s.last_inference <= after_ms
    assert [(b.batch_size, b.compute_infer.count) for b in s.batch_stats] == [(1, 6)]
    # Another model saw none of it.
    other = stats_of(client, ADD3)
    assert other.inference_stats.success.count == 0 and other.last_inference == 0
    assert len(other.batch_stats) == 0


def test_failures_count_apart(server, client):
    import myops_client
    start = stats_of(client, ADD3).inference_stats
    a = np.ones(3, dtype=np.float32)
    with pytest.raises(InferenceServerException):  # an input that does not decode
        client.infer(ADD3, [tensor("a", a, "FP32"), tensor("b", a, "FP32"),
                            tensor("alpha", np.array([True]), "BOOL")])
    with pytest.raises(InferenceServerException):  # missing argument: refused by binding
        client.infer(ADD3, [tensor("a", a, "FP32")])
    with pytest.raises(InferenceServerException):  # the op itself fails (shapes differ)
        client.infer(ADD3, [tensor("a", a, "FP32"), tensor("b", np.ones(4, np.float32), "FP32")])
    with pytest.raises(InferenceServerException):  # not a model: counts for none
        client.infer("myops_test::nope", [tensor("a", a, "FP32")])
    with myops_client.Client(server.address, timeout=60.0) as v1:
        with pytest.raises(myops_client.Error):  # through myops.v1 Call as well
            v1.call(ADD3, a, np.ones(4, np.float32))
    end = stats_of(client, ADD3).inference_stats
    assert end.fail.count - start.fail.count == 4  # not the unknown model's
    assert end.fail.ns > start.fail.ns
    assert end.success.count == start.success.count
    assert end.queue.count == start.queue.count


def test_rest_failures_count_as_on_grpc(server, client):
    """A REST request refused once its model is known (inputs that do not decode, a body
    that is not JSON, a missing argument) is a failure of that model, as on gRPC."""
    import tritonclient.http as httpclient
    import urllib.request
    rest = httpclient.InferenceServerClient(server.http_address)
    try:
        start = stats_of(client, ADD3).inference_stats
        a = np.ones(3, dtype=np.float32)

        def http_tensor(name, array, datatype):
            t = httpclient.InferInput(name, list(array.shape), datatype)
            t.set_data_from_numpy(array, binary_data=False)
            return t

        with pytest.raises(InferenceServerException):  # an input that does not decode
            rest.infer(ADD3, [http_tensor("a", a, "FP32"), http_tensor("b", a, "FP32"),
                              http_tensor("alpha", np.array([True]), "BOOL")])
        with pytest.raises(InferenceServerException):  # missing argument
            rest.infer(ADD3, [http_tensor("a", a, "FP32")])
        request = urllib.request.Request(  # a body that is not JSON
            f"http://{server.http_address}/v2/models/{ADD3}/infer", data=b"{not json",
            headers={"Content-Type": "application/json"}, method="POST")
        with pytest.raises(urllib.error.HTTPError) as raised:
            urllib.request.urlopen(request, timeout=30)
        assert raised.value.code == 400
        with pytest.raises(InferenceServerException):  # not a model: counts for none
            rest.infer("myops_test::nope", [http_tensor("a", a, "FP32")])
        end = stats_of(client, ADD3).inference_stats
        assert end.fail.count - start.fail.count == 3
        assert end.fail.ns > start.fail.ns
        assert end.success.count == start.success.count
    finally:
        rest.close()


def test_all_models_when_none_is_named(client):
    models = {s.name: s for s in client.get_inference_statistics("").model_stats}
    assert SCALE_SHIFT in models and ADD3 in models and "myops_test::chunks" in models
    assert "myops_test::bump_" not in models  # listed, not served: not a model
    assert all(s.version == "1" for s in models.values())
    assert models[SCALE_SHIFT].inference_stats.success.count == \
        stats_of(client, SCALE_SHIFT).inference_stats.success.count


def test_unknown_model_or_version_is_not_found(client):
    for model, version in ((("myops::nope", "")), (SCALE_SHIFT, "2"), ("", "3")):
        with pytest.raises(InferenceServerException) as raised:
            client.get_inference_statistics(model, version)
        assert raised.value.status() == "StatusCode.NOT_FOUND"
    assert stats_of(client, SCALE_SHIFT).version == "1"
    assert client.get_inference_statistics(SCALE_SHIFT, "1").model_stats[0].name == SCALE_SHIFT


def test_rest_statistics_are_the_same_counters(server, client):
    import tritonclient.http as httpclient
    rest = httpclient.InferenceServerClient(server.http_address)
    try:
        before = stats_of(client, SCALE_SHIFT).inference_stats.success.count
        x = np.arange(4, dtype=np.float32)
        t = httpclient.InferInput("x", [4], "FP32")
        t.set_data_from_numpy(x)
        rest.infer(SCALE_SHIFT, [t], parameters={"alpha": 2.0, "beta": 1.0})  # counts too
        (one,) = rest.get_inference_statistics(SCALE_SHIFT)["model_stats"]
        over_grpc = stats_of(client, SCALE_SHIFT)
        assert one["name"] == SCALE_SHIFT and one["version"] == "1"
        assert one["inference_stats"]["success"]["count"] == before + 1 == \
            over_grpc.inference_stats.success.count
        assert one["inference_stats"]["compute_infer"]["ns"] == \
            over_grpc.inference_stats.compute_infer.ns
        assert one["last_inference"] == over_grpc.last_inference
        assert one["batch_stats"][0]["batch_size"] == 1
        every = {m["name"] for m in rest.get_inference_statistics()["model_stats"]}
        assert {SCALE_SHIFT, ADD3} <= every and "myops_test::bump_" not in every
        assert "statistics" in rest.get_server_metadata()["extensions"]
        for model, version in (("myops::nope", ""), (SCALE_SHIFT, "2")):
            with pytest.raises(InferenceServerException) as raised:
                rest.get_inference_statistics(model, version)
            assert raised.value.status() == "404", raised.value
    finally:
        rest.close()
