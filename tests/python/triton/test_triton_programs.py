"""An exported program served by the real Triton through the myops backend: the model's
configuration names the AOTInductor package (parameters { key: "program" }) instead of an
operator; the backend loads it with the runtime's program loader, Triton's auto-complete
takes the inputs and outputs from its signature, and tritonclient gets the eager model's
results (rtol 1e-4, atol 1e-5) and INVALID_ARGUMENT naming the input for a batch outside
the compiled range. Skipped where tritonserver is not installed."""

from __future__ import annotations

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
