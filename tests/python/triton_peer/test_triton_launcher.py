"""The real NVIDIA Triton server through myops_testing.triton (TritonProcess,
backend_directory), serving the hand-written scaleshift backend that bench/vs_triton.sh
measures myops-server against (bench/peers/triton_scale_shift): tritonclient over gRPC and
HTTP gets alpha * x + beta bit for bit as myops computes it, errors travel with the
response, a model that fails to load leaves the others served, and SIGTERM ends the
server with status 0. Skipped where tritonserver (nvidia-pytriton) is not installed."""

from __future__ import annotations

import os
import pathlib
import shutil
import signal
import subprocess

import numpy as np
import pytest

from myops_testing import BUILD, REPO, TRITONSERVER, TritonProcess, backend_directory

PEER = BUILD / "bench" / "peers" / "triton_scale_shift"
CONFIG = REPO / "bench" / "peers" / "triton_scale_shift" / "config.pbtxt"
# The name myops-loadtest --protocol kserve calls. Triton serves it over gRPC, and over
# HTTP when the path holds "::" as is; tritonclient.http percent-encodes model names in
# its paths and Triton 2.51 does not decode them ("unknown model:
# 'myops%3A%3Ascale_shift'"), so the HTTP client calls the same model as "scale_shift".
MODEL, HTTP_MODEL = "myops::scale_shift", "scale_shift"

pytestmark = pytest.mark.skipif(
    TRITONSERVER is None, reason="tritonserver not installed (nvidia-pytriton: scripts/bootstrap.sh)")


def repository(root: pathlib.Path, names: tuple[str, ...] = (MODEL, HTTP_MODEL)) -> pathlib.Path:
    """A model repository with the scaleshift model under each of `names`."""
    for name in names:
        (root / name / "1").mkdir(parents=True)
        shutil.copy(CONFIG, root / name / "config.pbtxt")
    return root


def backends(tmp: pathlib.Path) -> pathlib.Path:
    if not (PEER / "libtriton_scaleshift.so").exists():
        pytest.fail(f"{PEER}/libtriton_scaleshift.so not found: build it first "
                    "(source scripts/env.sh && myops_build --target triton_scaleshift)")
    return backend_directory(tmp, {"scaleshift": PEER})


@pytest.fixture(scope="module")
def triton(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("triton")
    with TritonProcess(repository(tmp / "models"), backends(tmp)) as process:
        yield process


def inputs(seed: int = 0) -> np.ndarray:
    """float32 values with |x| in [0.5, 4) and zeros. For these, alpha = 2.5 and
    beta = -1.25, alpha * x + beta is exact in float64 (48 product bits, all within 2^4 and
    2^-46), so rounding it once to float32 is the single rounding of myops's fused
    multiply-add (ops/src/cpu/scale_shift_loop.cpp: fma(float(alpha), x, float(beta))),
    which x * alpha + beta in float32 (two roundings) is not."""
    rng = np.random.default_rng(seed)
    x = (rng.uniform(0.5, 4.0, 4099) * rng.choice([-1.0, 1.0], 4099)).astype(np.float32)
    x[::97] = 0
    return x


def expected(x: np.ndarray, alpha: float, beta: float) -> np.ndarray:
    exact = x.astype(np.float64) * np.float64(np.float32(alpha)) + np.float64(np.float32(beta))
    return exact.astype(np.float32)


def assert_bitwise(got: np.ndarray, want: np.ndarray) -> None:
    assert got.dtype == np.float32 and got.shape == want.shape
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


def test_grpc_alpha_and_beta_as_parameters_bit_for_bit(triton):
    import tritonclient.grpc as grpcclient
    x = inputs()
    with grpcclient.InferenceServerClient(triton.grpc_url) as client:
        assert client.is_model_ready(MODEL)
        given = grpcclient.InferInput("x", list(x.shape), "FP32")
        given.set_data_from_numpy(x)
        result = client.infer(MODEL, [given], parameters={"alpha": 2.5, "beta": -1.25})
        assert_bitwise(result.as_numpy("output__0"), expected(x, 2.5, -1.25))
        # Integer parameters (int64_param) are scalars too.
        result = client.infer(MODEL, [given], parameters={"alpha": 3, "beta": 1})
        assert_bitwise(result.as_numpy("output__0"), expected(x, 3, 1))


def test_grpc_alpha_and_beta_as_fp64_inputs_bit_for_bit(triton):
    """As myops-loadtest --kserve-scalars inputs sends them."""
    import tritonclient.grpc as grpcclient
    x = inputs(1)
    tensors = []
    for name, value in (("x", x), ("alpha", np.array([2.5])), ("beta", np.array([-1.25]))):
        tensors.append(grpcclient.InferInput(name, list(value.shape), "FP32" if name == "x" else "FP64"))
        tensors[-1].set_data_from_numpy(value)
    with grpcclient.InferenceServerClient(triton.grpc_url) as client:
        result = client.infer(MODEL, tensors)
    assert_bitwise(result.as_numpy("output__0"), expected(x, 2.5, -1.25))


def test_http_bit_for_bit(triton):
    import tritonclient.http as httpclient
    x = inputs(2)
    with httpclient.InferenceServerClient(triton.http_url) as client:
        given = httpclient.InferInput("x", list(x.shape), "FP32")
        given.set_data_from_numpy(x)
        result = client.infer(HTTP_MODEL, [given], parameters={"alpha": 2.5, "beta": -1.25})
    assert_bitwise(result.as_numpy("output__0"), expected(x, 2.5, -1.25))


def test_a_missing_scalar_is_an_error_of_that_request(triton):
    import tritonclient.grpc as grpcclient
    from tritonclient.utils import InferenceServerException
    x = np.ones(4, np.float32)
    with grpcclient.InferenceServerClient(triton.grpc_url) as client:
        given = grpcclient.InferInput("x", [4], "FP32")
        given.set_data_from_numpy(x)
        with pytest.raises(InferenceServerException, match="'beta' is missing") as error:
            client.infer(MODEL, [given], parameters={"alpha": 2.0})
        assert error.value.status() == "StatusCode.INVALID_ARGUMENT"
        stats = client.get_inference_statistics(MODEL, as_json=True)["model_stats"][0]
        assert int(stats["inference_stats"]["fail"]["count"]) >= 1
        # The server goes on serving.
        result = client.infer(MODEL, [given], parameters={"alpha": 2.0, "beta": 1.0})
        assert_bitwise(result.as_numpy("output__0"), np.full(4, 3, np.float32))


PYTHON_MODEL = """
import numpy as np
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "x").as_numpy()
            y = x * np.float32(2) + np.float32(1)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("output__0", y)]))
        return responses
"""


def test_python_backend_models_load_from_the_backend_directory(tmp_path):
    """backend_directory links pytriton's python backend with its stub; the stub runs in
    <venv>/triton-python (numpy below 2: under numpy 2 the inputs arrive as zeros)."""
    import tritonclient.grpc as grpcclient
    models = tmp_path / "models"
    (models / "twice_plus_one" / "1").mkdir(parents=True)
    (models / "twice_plus_one" / "1" / "model.py").write_text(PYTHON_MODEL)
    (models / "twice_plus_one" / "config.pbtxt").write_text(
        'backend: "python"\nmax_batch_size: 0\n'
        'input [ { name: "x" data_type: TYPE_FP32 dims: [ -1 ] } ]\n'
        'output [ { name: "output__0" data_type: TYPE_FP32 dims: [ -1 ] } ]\n'
        'instance_group [ { kind: KIND_CPU count: 1 } ]\n')
    with TritonProcess(models, backends(tmp_path)) as triton:
        with grpcclient.InferenceServerClient(triton.grpc_url) as client:
            x = np.arange(5, dtype=np.float32)
            given = grpcclient.InferInput("x", [5], "FP32")
            given.set_data_from_numpy(x)
            result = client.infer("twice_plus_one", [given]).as_numpy("output__0")
    np.testing.assert_array_equal(result, 2 * x + 1)


def test_a_model_that_fails_to_load_leaves_the_others_served(tmp_path):
    """--exit-on-error=false: without it Triton exits when one model fails to load."""
    import tritonclient.grpc as grpcclient
    models = repository(tmp_path / "models", (MODEL,))
    (models / "broken" / "1").mkdir(parents=True)
    (models / "broken" / "config.pbtxt").write_text(
        CONFIG.read_text().replace('backend: "scaleshift"', 'backend: "nosuchbackend"'))
    triton = TritonProcess(models, backends(tmp_path))
    triton.start(wait_ready=False)
    try:
        with grpcclient.InferenceServerClient(triton.grpc_url) as client:
            assert client.is_server_live() and not client.is_server_ready()
            assert not client.is_model_ready("broken")
            assert client.is_model_ready(MODEL)
        assert "failed to load 'broken'" in triton.log()
    finally:
        assert triton.stop() == 0


def test_the_backend_exports_only_its_entry_points():
    """-fvisibility=hidden and exports.map: Triton's TRITONBACKEND_* functions, nothing
    else; the TRITONSERVER_*/TRITONBACKEND_* calls stay undefined, bound by the server."""
    library = PEER / "libtriton_scaleshift.so"
    if not library.exists():
        pytest.fail(f"{library} not found: build it first")
    defined = subprocess.run(["nm", "-D", "--defined-only", str(library)], capture_output=True,
                             text=True, check=True).stdout.split()[2::3]
    assert sorted(defined) == ["TRITONBACKEND_Initialize", "TRITONBACKEND_ModelInstanceExecute"]
    dynamic = subprocess.run(["readelf", "-d", str(library)], capture_output=True, text=True,
                             check=True).stdout
    needed = [line for line in dynamic.splitlines() if "(NEEDED)" in line]
    assert needed and not any("triton" in line.lower() for line in needed), needed


def test_sigterm_stops_it_with_status_0(tmp_path):
    log = tmp_path / "triton.log"
    triton = TritonProcess(repository(tmp_path / "models", (MODEL,)), backends(tmp_path), log_path=log)
    triton.start()
    assert os.path.exists(f"/proc/{triton.pid}")
    assert "successfully loaded 'myops::scale_shift'" in triton.log()
    assert triton.stop(signal.SIGTERM) == 0
    assert triton.stop() == 0  # once stopped, the status again
    assert log.read_text() == triton.log()
