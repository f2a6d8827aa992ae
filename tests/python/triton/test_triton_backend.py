"""Operators served from Triton by the myops backend, called with Triton's own clients
(tritonclient, gRPC and HTTP): results equal the same call made locally with torch, bit
for bit; errors are Triton errors with the operator's message, and Triton keeps serving."""

from __future__ import annotations

import concurrent.futures
import os

import numpy as np
import pytest
import torch
import torchvision  # noqa: F401  (registers torch.ops.torchvision locally)
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from conftest import infer_through_shared_memory, model_configs, running_triton
from myops_testing import BUILD

torch.ops.load_library(str(BUILD / "python" / "myops" / "libmyops.so"))


def clients(triton):
    return [grpcclient.InferenceServerClient(triton.grpc_url),
            httpclient.InferenceServerClient(triton.http_url)]


def tensor(module, name, array):
    t = module.InferInput(name, list(array.shape), np_to_triton(array.dtype))
    t.set_data_from_numpy(array)
    return t


def np_to_triton(dtype):
    from tritonclient.utils import np_to_triton_dtype

    return np_to_triton_dtype(dtype)


def module_of(client):
    return grpcclient if isinstance(client, grpcclient.InferenceServerClient) else httpclient


def infer(client, model, inputs, parameters=None, outputs=None):
    m = module_of(client)
    ins = [tensor(m, name, a) for name, a in inputs.items()]
    outs = [m.InferRequestedOutput(o) for o in outputs] if outputs else None
    return client.infer(model, ins, outputs=outs, parameters=parameters)


def test_scale_shift_with_parameters_and_with_scalar_inputs_equals_the_local_call(triton):
    x = np.random.default_rng(0).standard_normal(1000).astype(np.float32)
    local = torch.ops.myops.scale_shift(torch.from_numpy(x), 1.7, -0.3).numpy()
    for client in clients(triton):
        r = infer(client, "scale_shift", {"x": x}, parameters={"alpha": 1.7, "beta": -0.3})
        np.testing.assert_array_equal(r.as_numpy("output__0"), local)
        r = infer(client, "scale_shift",
                  {"x": x, "alpha": np.array([1.7]), "beta": np.array([-0.3])})
        np.testing.assert_array_equal(r.as_numpy("output__0"), local)


def test_large_scale_shift_is_written_into_tritons_buffer_and_equals_the_local_call(triton):
    # 4 MiB: the backend computes scale_shift.out straight into Triton's output buffer.
    x = np.random.default_rng(1).standard_normal(1 << 20).astype(np.float32)
    local = torch.ops.myops.scale_shift(torch.from_numpy(x), 0.5, 2.0).numpy()
    for client in clients(triton):
        r = infer(client, "scale_shift", {"x": x}, parameters={"alpha": 0.5, "beta": 2.0})
        np.testing.assert_array_equal(r.as_numpy("output__0"), local)


def boxes_and_scores(n, seed):
    rng = np.random.default_rng(seed)
    xy = rng.uniform(0, 100, (n, 2)).astype(np.float32)
    wh = rng.uniform(1, 30, (n, 2)).astype(np.float32)
    return np.concatenate([xy, xy + wh], axis=1), rng.uniform(0, 1, n).astype(np.float32)


def test_torchvision_nms_from_its_wheel_equals_the_local_call(triton):
    boxes, scores = boxes_and_scores(500, 2)
    local = torch.ops.torchvision.nms(torch.from_numpy(boxes), torch.from_numpy(scores), 0.4)
    for client in clients(triton):
        r = infer(client, "nms", {"dets": boxes, "scores": scores},
                  parameters={"iou_threshold": 0.4})
        keep = r.as_numpy("output__0")
        assert keep.dtype == np.int64
        np.testing.assert_array_equal(keep, local.numpy())


def test_torchvision_roi_align_equals_the_local_call(triton):
    rng = np.random.default_rng(3)
    features = rng.standard_normal((2, 8, 32, 32)).astype(np.float32)
    rois = np.array([[0, 1.5, 2.0, 20.0, 18.5], [1, 0.0, 0.0, 31.0, 31.0]], dtype=np.float32)
    params = {"spatial_scale": 0.5, "pooled_height": 7, "pooled_width": 7, "sampling_ratio": 2,
              "aligned": True}
    local = torch.ops.torchvision.roi_align(torch.from_numpy(features), torch.from_numpy(rois),
                                            0.5, 7, 7, 2, True)
    for client in clients(triton):
        r = infer(client, "roi_align", {"input": features, "rois": rois}, parameters=params)
        np.testing.assert_array_equal(r.as_numpy("output__0"), local.numpy())


def test_aten_topk_two_outputs_and_output_selection(triton):
    x = np.random.default_rng(4).standard_normal((6, 50)).astype(np.float32)
    values, indices = torch.topk(torch.from_numpy(x), 5, dim=1)
    for client in clients(triton):
        r = infer(client, "topk", {"self": x}, parameters={"k": 5, "dim": 1})
        np.testing.assert_array_equal(r.as_numpy("values"), values.numpy())
        np.testing.assert_array_equal(r.as_numpy("indices"), indices.numpy())
        r = infer(client, "topk", {"self": x}, parameters={"k": 5}, outputs=["indices"])
        assert r.as_numpy("values") is None
        np.testing.assert_array_equal(r.as_numpy("indices"),
                                      torch.topk(torch.from_numpy(x), 5).indices.numpy())


def test_a_kernels_check_is_the_clients_error_and_triton_keeps_serving(triton):
    boxes, scores = boxes_and_scores(5, 7)
    for client in clients(triton):
        # torchvision's nms checks that boxes and scores are as many (TORCH_CHECK): the
        # client gets that message, as a local call would raise it.
        with pytest.raises(InferenceServerException) as e:
            infer(client, "nms", {"dets": boxes, "scores": scores[:3]},
                  parameters={"iou_threshold": 0.5})
        assert "same number of elements" in str(e.value), str(e.value)
        assert e.value.status() in ("StatusCode.INVALID_ARGUMENT", "400"), e.value.status()
        x = np.ones(4, np.float32)
        r = infer(client, "scale_shift", {"x": x}, parameters={"alpha": 2.0, "beta": 1.0})
        np.testing.assert_array_equal(r.as_numpy("output__0"), np.full(4, 3.0, np.float32))


def test_bad_arguments_are_precise_invalid_argument_errors(triton):
    x = np.ones(4, np.float32)
    grpc_client, http_client = clients(triton)
    with pytest.raises(InferenceServerException) as e:
        infer(grpc_client, "scale_shift", {"x": x}, parameters={"alpha": "two", "beta": 1.0})
    assert e.value.status() == "StatusCode.INVALID_ARGUMENT"
    assert "alpha" in e.value.message()
    with pytest.raises(InferenceServerException) as e:
        infer(grpc_client, "scale_shift", {"x": x}, parameters={"beta": 1.0})
    assert e.value.status() == "StatusCode.INVALID_ARGUMENT"
    assert "alpha" in e.value.message(), e.value.message()
    with pytest.raises(InferenceServerException) as e:
        infer(http_client, "scale_shift", {"x": x, "alpha": np.array([1.0, 2.0])},
              parameters={"beta": 1.0})
    assert e.value.status() == "400"
    assert "alpha" in e.value.message(), e.value.message()


def test_unknown_op_and_bad_library_fail_their_model_load_with_the_reason(triton):
    index = {m["name"]: m for m in grpcclient.InferenceServerClient(
        triton.grpc_url).get_model_repository_index(as_json=True)["models"]}
    assert index["unknown_op"]["state"] == "UNAVAILABLE"
    assert "myops::no_such_op" in index["unknown_op"]["reason"], index["unknown_op"]
    assert index["bad_library"]["state"] == "UNAVAILABLE"
    assert "/nonexistent/libmylib.so" in index["bad_library"]["reason"], index["bad_library"]
    for name in ("scale_shift", "nms", "roi_align", "topk"):
        assert index[name]["state"] == "READY", index[name]


def test_a_fifo_or_an_empty_library_item_fails_its_model_alone_and_at_once(tmp_path):
    # A program or library path that is a FIFO would block the load's open() forever, and
    # Triton with it; ",,," names no library: both are refused at load, with the reason,
    # and the other model serves.
    fifo = tmp_path / "model.pt2"
    os.mkfifo(fifo)
    configs = {
        "scale_shift": model_configs()["scale_shift"],
        "fifo_program": f"""
            backend: "myops"
            parameters {{ key: "program" value {{ string_value: "{fifo}" }} }}
        """,
        "fifo_library": f"""
            backend: "myops"
            parameters {{ key: "op" value {{ string_value: "mylib::op" }} }}
            parameters {{ key: "libraries" value {{ string_value: "{fifo}" }} }}
        """,
        "empty_libraries": """
            backend: "myops"
            parameters { key: "op" value { string_value: "myops::scale_shift" } }
            parameters { key: "libraries" value { string_value: ",,," } }
        """,
    }
    with running_triton(tmp_path, configs, wait_ready=False) as server:  # Not all are ready.
        client = grpcclient.InferenceServerClient(server.grpc_url)
        index = {m["name"]: m for m in client.get_model_repository_index(as_json=True)["models"]}
        for name in ("fifo_program", "fifo_library", "empty_libraries"):
            assert index[name]["state"] == "UNAVAILABLE", index[name]
        assert (f"program fifo_program ({fifo}): not a readable AOTInductor package: it is a "
                "FIFO, not a regular file") \
            in index["fifo_program"]["reason"], index["fifo_program"]
        assert f"cannot load operator library {fifo}: it is a FIFO, not a regular file" \
            in index["fifo_library"]["reason"], index["fifo_library"]
        assert "parameter 'libraries' has an empty item in \",,,\"" \
            in index["empty_libraries"]["reason"], index["empty_libraries"]
        x = np.arange(5, dtype=np.float32)
        y = infer(client, "scale_shift", {"x": x}, parameters={"alpha": 2.0, "beta": 1.0})
        np.testing.assert_array_equal(y.as_numpy("output__0"), 2 * x + 1)


def test_the_configuration_is_completed_from_the_schema(triton):
    config = httpclient.InferenceServerClient(triton.http_url).get_model_config("scale_shift")
    inputs = {i["name"]: i for i in config["input"]}
    assert inputs["x"]["data_type"] == "TYPE_FP32" and inputs["x"]["dims"] == [-1]
    assert not inputs["x"].get("optional", False)
    assert inputs["alpha"]["data_type"] == "TYPE_FP64" and inputs["alpha"]["optional"]
    assert [o["name"] for o in config["output"]] == ["output__0"]
    # A listed input stays as written; the others are added.
    nms = httpclient.InferenceServerClient(triton.http_url).get_model_config("nms")
    dets = next(i for i in nms["input"] if i["name"] == "dets")
    assert dets["dims"] == [-1, 4] and dets["data_type"] == "TYPE_FP32"
    assert [i["name"] for i in nms["input"]] == ["dets", "scores", "iou_threshold"]


def test_statistics_count_the_backends_executions(triton):
    client = httpclient.InferenceServerClient(triton.http_url)
    before = client.get_inference_statistics("scale_shift")["model_stats"][0]
    for _ in range(3):
        infer(client, "scale_shift", {"x": np.ones(8, np.float32)},
              parameters={"alpha": 1.0, "beta": 0.0})
    after = client.get_inference_statistics("scale_shift")["model_stats"][0]
    assert after["inference_count"] - before["inference_count"] == 3
    assert after["execution_count"] - before["execution_count"] == 3
    assert after["inference_stats"]["compute_infer"]["ns"] > before["inference_stats"][
        "compute_infer"]["ns"]


def test_system_shared_memory_inputs_and_outputs(triton):
    x = np.random.default_rng(6).standard_normal(4096).astype(np.float32)
    client = grpcclient.InferenceServerClient(triton.grpc_url)
    got = infer_through_shared_memory(grpcclient, client, "scale_shift", x, 3.0, 1.0)
    np.testing.assert_array_equal(
        got, torch.ops.myops.scale_shift(torch.from_numpy(x), 3.0, 1.0).numpy())


def test_dynamic_batching_is_correct_under_32_concurrent_clients(triton):
    """Requests that Triton hands over together run as one call when they agree in their
    parameters (scale_shift is pointwise); those that do not run one by one. Every client
    gets exactly its own rows."""
    stats = httpclient.InferenceServerClient(triton.http_url)

    def batch_sizes():
        model = stats.get_inference_statistics("scale_shift_batched")["model_stats"][0]
        return {int(b["batch_size"]): int(b["compute_infer"]["count"])
                for b in model.get("batch_stats", [])}

    before = batch_sizes()

    def one(i):
        client = grpcclient.InferenceServerClient(triton.grpc_url)
        rng = np.random.default_rng(100 + i)
        # A quarter of the clients disagree with the rest.
        alpha, beta = (2.0, 1.0) if i % 4 else (0.5, -1.0)
        for j in range(10):
            x = rng.standard_normal((1 + (i + j) % 3, 64)).astype(np.float32)
            r = infer(client, "scale_shift_batched", {"x": x},
                      parameters={"alpha": alpha, "beta": beta})
            expected = torch.ops.myops.scale_shift(torch.from_numpy(x), alpha, beta).numpy()
            np.testing.assert_array_equal(r.as_numpy("output__0"), expected)
        return True

    with concurrent.futures.ThreadPoolExecutor(32) as pool:
        assert all(pool.map(one, range(32)))
    after = batch_sizes()
    grew = {b: n - before.get(b, 0) for b, n in after.items() if n > before.get(b, 0)}
    assert sum(b * n for b, n in grew.items()) >= 320, grew  # every row computed
    assert max(grew) > 3, grew  # some calls ran several requests' rows at once
