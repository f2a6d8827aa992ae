"""An exported program served by the real Triton through the myops backend: the model's
configuration names the AOTInductor package (parameters { key: "program" }) instead of an
operator; the backend loads it with the runtime's program loader, Triton's auto-complete
takes the inputs and outputs from its signature, and tritonclient gets the eager model's
results (rtol 1e-4, atol 1e-5) and INVALID_ARGUMENT naming the input for a batch outside
the compiled range. Skipped where tritonserver is not installed."""

from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest
import torch

from myops_testing.programs import example_package, example_program
from conftest import running_triton, torchvision_library


@pytest.fixture(scope="module")
def example():
    return example_program()


@pytest.fixture(scope="module")
def triton(tmp_path_factory):
    with running_triton(tmp_path_factory.mktemp("triton-programs"), {"detector": f"""
        backend: "myops"
        instance_group [ {{ kind: KIND_CPU count: 2 }} ]
        parameters {{ key: "program" value {{ string_value: "{example_package()}" }} }}
        parameters {{ key: "libraries" value {{ string_value: "{torchvision_library()}" }} }}
    """}) as process:
        yield process


def request(image, boxes):
    import tritonclient.grpc as grpcclient
    sent = [grpcclient.InferInput("image", list(image.shape), "FP32"),
            grpcclient.InferInput("boxes", list(boxes.shape), "FP32")]
    sent[0].set_data_from_numpy(image)
    sent[1].set_data_from_numpy(boxes)
    return sent


def test_triton_serves_the_program_with_the_eager_models_results(triton, example):
    import tritonclient.grpc as grpcclient
    client = grpcclient.InferenceServerClient(triton.grpc_url)
    config = client.get_model_config("detector", as_json=True)["config"]
    assert [(i["name"], i["dims"]) for i in config["input"]] == [
        ("image", ["-1", "3", "16", "16"]), ("boxes", ["4", "5"])]
    for batch in (2, 7, 15):
        image_t, boxes_t = example.example_inputs(batch)
        result = client.infer("detector", request(image_t.numpy(), boxes_t.numpy()))
        with torch.no_grad():
            pooled, features = example.build_model()(image_t, boxes_t)
        np.testing.assert_allclose(result.as_numpy("pooled"), pooled.numpy(), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(result.as_numpy("features"), features.numpy(), rtol=1e-4,
                                   atol=1e-5)


def test_a_batch_outside_the_compiled_range_is_invalid_argument(triton):
    import tritonclient.grpc as grpcclient
    from tritonclient.utils import InferenceServerException
    client = grpcclient.InferenceServerClient(triton.grpc_url)
    image = np.zeros((16, 3, 16, 16), dtype=np.float32)
    with pytest.raises(InferenceServerException,
                       match=r"program detector: input 'image' has size 16 in dimension 0") as e:
        client.infer("detector", request(image, np.zeros((4, 5), dtype=np.float32)))
    assert e.value.status() == "StatusCode.INVALID_ARGUMENT"


def lying_package(tmp_path):
    """The example package with a signature record that contradicts its compiled code: it
    says 4x4 images, the code reads 16x16 ones."""
    lying = tmp_path / "lying.pt2"
    with zipfile.ZipFile(example_package()) as src, zipfile.ZipFile(lying, "w") as dst:
        for item in src.infolist():
            data = src.read(item)
            if item.filename.endswith("wrapper_metadata.json"):
                metadata = json.loads(data)
                signature = json.loads(metadata["myops.signature"])
                assert signature["inputs"][0]["shape"][2:] == [16, 16], signature
                signature["inputs"][0]["shape"][2:] = [4, 4]
                metadata["myops.signature"] = json.dumps(signature)
                data = json.dumps(metadata).encode()
            dst.writestr(item, data)
    return lying


def test_a_record_that_contradicts_the_code_cannot_make_it_read_past_an_input(tmp_path, example):
    # The record is user data: a request it accepts (4x4 images) reaches the compiled code,
    # which checks its inputs itself (AOTI_RUNTIME_CHECK_INPUTS, set by the backend) and
    # refuses it, where unchecked it read 16x16 floats from a 4x4 input. Triton lives on.
    import tritonclient.grpc as grpcclient
    from tritonclient.utils import InferenceServerException
    config = f"""
        backend: "myops"
        parameters {{ key: "program" value {{ string_value: "{lying_package(tmp_path)}" }} }}
        parameters {{ key: "libraries" value {{ string_value: "{torchvision_library()}" }} }}
    """
    with running_triton(tmp_path, {"lying": config}) as server:
        client = grpcclient.InferenceServerClient(server.grpc_url)
        _, boxes = example.example_inputs(2)
        image = np.ones((2, 3, 4, 4), np.float32)
        with pytest.raises(InferenceServerException):
            client.infer("lying", request(image, boxes.numpy()))
        assert client.is_server_live()
    # The compiled code's own words go to Triton's log (the client gets AOTInductor's
    # "API call failed").
    assert "unmatched dim value at 2, expected: 16, but got: 4" in \
        (tmp_path / "triton.log").read_text()
