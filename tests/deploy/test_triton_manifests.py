"""Checks that deploy/triton (Triton with the myops backend: the image's `triton` stage, its
model repository, the Kubernetes and KServe manifests) agrees with itself, and that its
model repository really serves in Triton with the built backend.

Rendered with the real kubectl: the image, user and Triton's ports are the Dockerfile's;
probes use Triton's HTTP health endpoints; KServe routes the one port Triton is told to
listen on. Then the real tritonserver (nvidia-pytriton, skipped when absent) loads
deploy/triton/models with build/backends/triton as its backend directory, as the image's
ENTRYPOINT does with its staged copy, and answers scale_shift.
"""

import re
import subprocess
import sys

import numpy as np
import pytest
import yaml

from test_manifests import BUILD, DEPLOY, kubectl

TRITON = DEPLOY / "triton"
HTTP, GRPC, METRICS = 8000, 8001, 8002


def render(folder):
    out = subprocess.run([kubectl(), "kustomize", str(TRITON / folder)], capture_output=True,
                         text=True)
    assert out.returncode == 0, f"kubectl kustomize deploy/triton/{folder}: {out.stderr}"
    return {(d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all(out.stdout) if d}


def dockerfile():
    return (DEPLOY / "Dockerfile").read_text()


def triton_stage():
    text = dockerfile()
    start = text.index("AS triton\n")
    return text[start:text.index("\nFROM ", start)]


def test_the_triton_stage_is_not_the_default_target():
    stages = re.findall(r"^FROM \S+ AS (\S+)$", dockerfile(), re.M)
    assert stages[-1] == "runtime" and "triton" in stages, stages


def test_the_image_serves_the_staged_backend_and_the_example_models():
    stage = triton_stage()
    assert "COPY deploy/triton/models /models" in stage
    assert '"--model-repository=/models"' in stage
    assert '"--backend-directory=/opt/triton/backends"' in stage
    assert f"EXPOSE {HTTP} {GRPC} {METRICS}" in stage
    assert "USER 10001:10001" in stage and "/v2/health/ready" in stage
    staging = (DEPLOY / "stage-runtime.sh").read_text()
    assert '"$triton/backends/myops/"' in staging  # where the ENTRYPOINT looks
    assert "triton_myops" in dockerfile()  # the builder builds the backend


def test_kubernetes_deployment_matches_the_image():
    objs = render("k8s")
    spec = objs[("Deployment", "myops-triton")]["spec"]["template"]["spec"]
    (c,) = spec["containers"]
    assert c["image"] == "myops-triton"
    assert {p["name"]: p["containerPort"] for p in c["ports"]} == {
        "http": HTTP, "grpc": GRPC, "metrics": METRICS}
    assert c["readinessProbe"]["httpGet"] == {"path": "/v2/health/ready", "port": "http"}
    assert c["livenessProbe"]["httpGet"] == {"path": "/v2/health/live", "port": "http"}
    assert spec["securityContext"]["runAsUser"] == 10001
    exit_timeout = int(next(a for a in c["args"] if a.startswith("--exit-timeout-secs="))
                       .split("=")[1])
    assert spec["terminationGracePeriodSeconds"] > exit_timeout  # in-flight requests finish
    service = objs[("Service", "myops-triton")]["spec"]
    assert service["selector"] == objs[("Deployment", "myops-triton")]["spec"]["selector"][
        "matchLabels"]
    assert {p["targetPort"] for p in service["ports"]} == {"http", "grpc", "metrics"}


def test_kserve_routes_the_port_triton_listens_on():
    objs = render("kserve")
    runtime = objs[("ServingRuntime", "myops-triton")]["spec"]
    (c,) = runtime["containers"]
    assert c["name"] == "kserve-container" and c["image"] == "myops-triton"
    (port,) = c["ports"]
    assert f"--http-port={port['containerPort']}" in c["args"]
    assert runtime["annotations"]["prometheus.kserve.io/port"] == str(METRICS)
    service = objs[("InferenceService", "myops-triton")]["spec"]["predictor"]["model"]
    assert service["runtime"] == "myops-triton"
    assert service["modelFormat"]["name"] in {f["name"] for f in runtime["supportedModelFormats"]}


def test_the_example_model_repository_serves_in_triton(tmp_path):
    sys.path.insert(0, str(BUILD.parent / "tests" / "python"))
    from myops_testing.triton import TRITONSERVER, TritonProcess

    if TRITONSERVER is None:
        pytest.skip("tritonserver is not installed (scripts/bootstrap.sh installs nvidia-pytriton)")
    backends = BUILD / "backends" / "triton"
    if not (backends / "myops" / "libtriton_myops.so").exists():
        pytest.skip("the myops Triton backend is not built")
    import tritonclient.grpc as grpcclient

    with TritonProcess(TRITON / "models", backends, log_path=tmp_path / "triton.log") as triton:
        client = grpcclient.InferenceServerClient(triton.grpc_url)
        x = np.arange(-4, 4, dtype=np.float32).reshape(2, 4)  # [batch, 4]: max_batch_size > 0
        inp = grpcclient.InferInput("x", list(x.shape), "FP32")
        inp.set_data_from_numpy(x)
        r = client.infer("scale_shift", [inp], parameters={"alpha": 2.0, "beta": 1.0})
        np.testing.assert_array_equal(r.as_numpy("output__0"), 2 * x + 1)
