"""Exported programs served with --program: scripts/export_program.py's model (which
calls myops::scale_shift and torchvision::roi_align) exported with torch.export, packaged
with AOTInductor, served by myops-server and called through tritonclient (gRPC and HTTP)
and myops_client. Results equal the eager model's within float32 tolerance (the compiled
code fuses and reorders arithmetic: rtol 1e-4, atol 1e-5); bad inputs get
INVALID_ARGUMENT naming the input and what the export accepts; packages the server cannot
serve stop its start-up with a message naming the package (and the missing operator)."""

from __future__ import annotations

import json
import os
import subprocess
import zipfile

import numpy as np
import pytest
import torch

from myops_testing import SERVER

RTOL, ATOL = 1e-4, 1e-5


def eager(example, image, boxes):
    with torch.no_grad():
        pooled, features = example.build_model()(torch.from_numpy(image), torch.from_numpy(boxes))
    return pooled.numpy(), features.numpy()


def inputs(example, batch):
    image, boxes = example.example_inputs(batch)
    return image.numpy(), boxes.numpy()


@pytest.mark.parametrize("batch", [2, 5, 15])
def test_tritonclient_grpc_gets_the_eager_models_results(triton_grpc, example, batch):
    import tritonclient.grpc as grpcclient
    image, boxes = inputs(example, batch)
    sent = [grpcclient.InferInput("image", list(image.shape), "FP32"),
            grpcclient.InferInput("boxes", list(boxes.shape), "FP32")]
    sent[0].set_data_from_numpy(image)
    sent[1].set_data_from_numpy(boxes)
    result = triton_grpc.infer("detector", sent)
    pooled, features = eager(example, image, boxes)
    assert result.as_numpy("pooled").shape == (4, 8, 2, 2)
    assert result.as_numpy("features").shape == (batch, 8)
    np.testing.assert_allclose(result.as_numpy("pooled"), pooled, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(result.as_numpy("features"), features, rtol=RTOL, atol=ATOL)


def test_tritonclient_http_gets_the_eager_models_results(triton_http, example):
    import tritonclient.http as httpclient
    image, boxes = inputs(example, 3)
    sent = [httpclient.InferInput("image", list(image.shape), "FP32"),
            httpclient.InferInput("boxes", list(boxes.shape), "FP32")]
    sent[0].set_data_from_numpy(image, binary_data=True)
    sent[1].set_data_from_numpy(boxes, binary_data=False)
    result = triton_http.infer("detector", sent)
    pooled, features = eager(example, image, boxes)
    np.testing.assert_allclose(result.as_numpy("pooled"), pooled, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(result.as_numpy("features"), features, rtol=RTOL, atol=ATOL)


def test_myops_client_calls_the_program_by_name(client, example):
    image, boxes = inputs(example, 4)
    pooled, features = client.call("detector", image, boxes)
    want = eager(example, image, boxes)
    np.testing.assert_allclose(pooled, want[0], rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(features, want[1], rtol=RTOL, atol=ATOL)
    by_name = client.call("detector", boxes=boxes, image=image)
    np.testing.assert_array_equal(by_name[1], features)
    (_, _), timing = client.with_options(return_timing=True).call("detector", image, boxes)
    assert timing.device == "cpu"


def test_metadata_and_listing_describe_the_exported_signature(triton_grpc, client):
    meta = triton_grpc.get_model_metadata("detector", as_json=True)
    assert [(i["name"], i["datatype"], i["shape"]) for i in meta["inputs"]] == [
        ("image", "FP32", ["-1", "3", "16", "16"]), ("boxes", "FP32", ["4", "5"])]
    assert [(o["name"], o["datatype"], o["shape"]) for o in meta["outputs"]] == [
        ("pooled", "FP32", ["4", "8", "2", "2"]), ("features", "FP32", ["-1", "8"])]
    assert triton_grpc.is_model_ready("detector")
    [listed] = [op for op in client.list_operators() if op["name"] == "detector"]
    assert listed["schema"] == (
        "program detector(float32[2..15, 3, 16, 16] image, float32[4, 5] boxes) -> "
        "(float32[4, 8, 2, 2] pooled, float32[-1, 8] features)")


def test_statistics_count_the_programs_calls(triton_grpc, example):
    import tritonclient.grpc as grpcclient

    def count():
        stats = triton_grpc.get_inference_statistics("detector", as_json=True)
        return int(stats["model_stats"][0]["inference_stats"]["success"].get("count", 0))
    before = count()
    image, boxes = inputs(example, 2)
    sent = [grpcclient.InferInput("image", list(image.shape), "FP32"),
            grpcclient.InferInput("boxes", list(boxes.shape), "FP32")]
    sent[0].set_data_from_numpy(image)
    sent[1].set_data_from_numpy(boxes)
    triton_grpc.infer("detector", sent)
    assert count() == before + 1


@pytest.mark.parametrize("image_shape,dtype,message", [
    ((16, 3, 16, 16), np.float32, r"input 'image' has size 16 in dimension 0; it takes "
                                  r"float32\[2\.\.15, 3, 16, 16\] \(got float32\[16, 3, 16, 16\]\)"),
    ((1, 3, 16, 16), np.float32, r"input 'image' has size 1 in dimension 0"),
    ((2, 3, 16, 15), np.float32, r"input 'image' has size 15 in dimension 3"),
    ((3, 16, 16), np.float32, r"input 'image' has 3 dimensions, not 4"),
    ((2, 3, 16, 16), np.float64, r"input 'image' has dtype float64"),
    ((0, 3, 16, 16), np.float32, r"input 'image' has size 0 in dimension 0"),
])
def test_inputs_outside_the_export_are_refused(triton_grpc, image_shape, dtype, message):
    import tritonclient.grpc as grpcclient
    from tritonclient.utils import InferenceServerException
    image = np.zeros(image_shape, dtype=dtype)
    boxes = np.zeros((4, 5), dtype=np.float32)
    sent = [grpcclient.InferInput("image", list(image.shape), "FP64" if dtype == np.float64
                                  else "FP32"),
            grpcclient.InferInput("boxes", list(boxes.shape), "FP32")]
    sent[0].set_data_from_numpy(image)
    sent[1].set_data_from_numpy(boxes)
    with pytest.raises(InferenceServerException, match="program detector: " + message) as error:
        triton_grpc.infer("detector", sent)
    assert error.value.status() == "StatusCode.INVALID_ARGUMENT"


def test_a_missing_input_is_refused_by_name(triton_grpc):
    import tritonclient.grpc as grpcclient
    from tritonclient.utils import InferenceServerException
    image = np.zeros((2, 3, 16, 16), dtype=np.float32)
    sent = [grpcclient.InferInput("image", list(image.shape), "FP32")]
    sent[0].set_data_from_numpy(image)
    with pytest.raises(InferenceServerException, match="boxes") as error:
        triton_grpc.infer("detector", sent)
    assert error.value.status() == "StatusCode.INVALID_ARGUMENT"


def start(*flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SERVER), "--address", "127.0.0.1:0", "--devices", "cpu", *flags],
                          capture_output=True, text=True, timeout=120)


skip_launcher = pytest.mark.skipif(bool(os.environ.get("MYOPS_TEST_LAUNCHER")),
                                   reason="runs the server binary itself")


@skip_launcher
def test_a_program_whose_operator_is_not_loaded_stops_start_up(package):
    done = start("--program", f"detector={package}")  # torchvision not loaded
    assert done.returncode == 1
    assert (f"program detector ({package}): it calls the operator torchvision::roi_align, "
            "which is not registered (load its library with --load-library PATH)") in done.stderr


@skip_launcher
def test_a_package_without_a_signature_stops_start_up(package, tmp_path):
    # The same package with its "myops.signature" metadata removed.
    stripped = tmp_path / "stripped.pt2"
    with zipfile.ZipFile(package) as src, zipfile.ZipFile(stripped, "w") as dst:
        for item in src.infolist():
            data = src.read(item)
            if item.filename.endswith("wrapper_metadata.json"):
                metadata = json.loads(data)
                del metadata["myops.signature"]
                data = json.dumps(metadata).encode()
            dst.writestr(item, data)
    done = start("--program", f"plain={stripped}")
    assert done.returncode == 1
    assert f"program plain ({stripped}): the package has no \"myops.signature\" metadata" \
        in done.stderr


@skip_launcher
@pytest.mark.parametrize("flag,message", [
    ("detector=/nonexistent.pt2", "program detector (/nonexistent.pt2): not a readable "
                                  "AOTInductor package"),
    ("=x.pt2", "--program '=x.pt2': expected NAME=PATH"),
    ("a::b=x.pt2", "--program 'a::b=x.pt2': NAME must be 1-64 letters, digits, '_' or '-'"),
])
def test_bad_program_flags_stop_start_up(flag, message):
    done = start("--program", flag)
    assert done.returncode != 0
    assert message in done.stderr


@skip_launcher
@pytest.mark.parametrize("kind", ["fifo", "symlink to a fifo", "directory"])
def test_a_program_that_is_not_a_regular_file_stops_start_up_at_once(tmp_path, kind):
    # A FIFO would block the package reader's open() forever: start-up hung, silent. A
    # link is judged by what it points to.
    path = tmp_path / "model.pt2"
    if kind == "directory":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        os.mkfifo(tmp_path / "pipe")
        path.symlink_to(tmp_path / "pipe")
    done = start("--program", f"m={path}")
    assert done.returncode == 1
    what = "a directory" if kind == "directory" else "a FIFO"
    assert (f"program m ({path}): not a readable AOTInductor package: it is {what}, "
            "not a regular file") in done.stderr


@skip_launcher
def test_two_programs_of_one_name_stop_start_up(package):
    import torchvision
    library = os.path.join(os.path.dirname(torchvision.__file__), "_C.so")
    done = start("--load-library", library, "--program", f"d={package}", "--program", f"d={package}")
    assert done.returncode == 1
    assert "two programs are named d (--program)" in done.stderr


def test_concurrent_calls_beyond_the_model_instances_all_complete(program_server, example):
    # The package holds one model instance per CPU worker (2 here); small calls also run
    # inline on gRPC threads, so 8 callers contend for them: each waits for an instance.
    from concurrent.futures import ThreadPoolExecutor

    import myops_client
    clients = [myops_client.Client(program_server.address) for _ in range(8)]

    cases = [inputs(example, 2 + i % 14) for i in range(16)]
    wants = [eager(example, *case) for case in cases]  # here: the eager model seeds torch

    def run(i):
        image, boxes = cases[i]
        got = [clients[i % 8].call("detector", image, boxes) for _ in range(10)]
        want = wants[i]
        for pooled, features in got:
            np.testing.assert_allclose(pooled, want[0], rtol=RTOL, atol=ATOL)
            np.testing.assert_allclose(features, want[1], rtol=RTOL, atol=ATOL)
        return len(got)

    with ThreadPoolExecutor(8) as pool:
        assert sum(pool.map(run, range(16))) == 160
    for c in clients:
        c.close()
