"""Checks that deploy/kserve (the KServe serving runtime and its example InferenceServices)
agrees with itself, with deploy/k8s and the image, and with the server.

Rendered with the real kubectl (`kubectl kustomize`), then: each InferenceService names
the runtime, a model format and a protocol it supports; the routed ports are the ones the
server listens on (REST 8080 for v2, gRPC 50051 named h2c for grpc-v2); the metrics
annotation follows MYOPS_METRICS_ADDRESS; the image, user and MYOPS_* variables are the
image's and the server's; drain + grace fit the pods' default termination grace period.
The runtime's environment then starts the real myops-server, whose REST and gRPC
endpoints answer the protocol's readiness calls.
"""

import re
import subprocess
import urllib.request

import pytest

from test_manifests import DEPLOY, dockerfile, help_text, kubectl, port_of

TERMINATION_GRACE_DEFAULT_S = 30
HTTP_PORT, GRPC_PORT, METRICS_PORT = 8080, 50051, 9090


@pytest.fixture(scope="module")
def rendered():
    out = subprocess.run([kubectl(), "kustomize", str(DEPLOY / "kserve")],
                         capture_output=True, text=True)
    assert out.returncode == 0, f"kubectl kustomize deploy/kserve: {out.stderr}"
    import yaml
    docs = [d for d in yaml.safe_load_all(out.stdout) if d]
    return {(d["kind"], d["metadata"]["name"]): d for d in docs}


def runtime(rendered):
    return rendered[("ServingRuntime", "myops")]


def container(rendered):
    (c,) = runtime(rendered)["spec"]["containers"]
    assert c["name"] == "kserve-container"  # the name KServe merges the predictor into
    return c


def env(rendered):
    return {e["name"]: e.get("value") for e in container(rendered)["env"]}


def test_renders_the_runtime_and_both_services(rendered):
    assert set(rendered) == {("ServingRuntime", "myops"), ("InferenceService", "myops"),
                             ("InferenceService", "myops-grpc")}
    assert runtime(rendered)["apiVersion"] == "serving.kserve.io/v1alpha1"
    for kind, name in rendered:
        if kind == "InferenceService":
            assert rendered[(kind, name)]["apiVersion"] == "serving.kserve.io/v1beta1"


def test_services_use_what_the_runtime_supports(rendered):
    spec = runtime(rendered)["spec"]
    formats = {f["name"] for f in spec["supportedModelFormats"]}
    for name, protocol in (("myops", "v2"), ("myops-grpc", "grpc-v2")):
        model = rendered[("InferenceService", name)]["spec"]["predictor"]["model"]
        assert model["runtime"] == "myops", name
        assert model["modelFormat"]["name"] in formats, name
        assert model["protocolVersion"] == protocol and protocol in spec["protocolVersions"]
        assert "storageUri" not in model  # the models are the served operators


def test_routed_ports_are_the_servers(rendered):
    c, e = container(rendered), env(rendered)
    (http,) = c["ports"]  # Knative routes exactly one port
    assert (http["name"], http["containerPort"]) == ("http1", HTTP_PORT)
    assert port_of(e["MYOPS_HTTP_ADDRESS"]) == HTTP_PORT
    grpc_model = rendered[("InferenceService", "myops-grpc")]["spec"]["predictor"]["model"]
    (h2c,) = grpc_model["ports"]
    assert (h2c["name"], h2c["containerPort"]) == ("h2c", GRPC_PORT)
    assert port_of(e["MYOPS_ADDRESS"]) == GRPC_PORT
    assert "ports" not in rendered[("InferenceService", "myops")]["spec"]["predictor"]["model"]
    annotations = runtime(rendered)["spec"]["annotations"]
    assert int(annotations["prometheus.kserve.io/port"]) == METRICS_PORT
    assert annotations["prometheus.kserve.io/path"] == "/metrics"
    assert port_of(e["MYOPS_METRICS_ADDRESS"]) == METRICS_PORT


def test_image_user_and_variables_are_the_servers(rendered):
    base = subprocess.run([kubectl(), "kustomize", str(DEPLOY / "k8s")], capture_output=True,
                          text=True, check=True).stdout
    assert f"image: {container(rendered)['image']}\n" in base  # the same image as deploy/k8s
    user = dict(dockerfile())["USER"].split(":")[0]
    assert container(rendered)["securityContext"]["runAsUser"] == int(user)
    e = env(rendered)
    assert float(e["MYOPS_DRAIN_DELAY"]) + float(e["MYOPS_GRACE_PERIOD"]) < TERMINATION_GRACE_DEFAULT_S
    known = set(re.findall(r"\(Env:(MYOPS_\w+)\)", help_text("server/myops-server")))
    assert {n for n in e if n.startswith("MYOPS_")} <= known, sorted(set(e) - known)


def test_the_server_runs_with_the_runtimes_environment(rendered, monkeypatch):
    """The runtime's variables, given to the real server (addresses on free loopback ports,
    the values Kubernetes fills in set by hand): its REST and gRPC endpoints answer the
    protocol's readiness calls for the operator every InferenceService serves."""
    from myops_testing import ServerProcess
    for name, value in env(rendered).items():
        monkeypatch.setenv(name, value if value is not None else "1")
    monkeypatch.setenv("MYOPS_HTTP_ADDRESS", "127.0.0.1:0")
    monkeypatch.setenv("MYOPS_DRAIN_DELAY", "0")
    server = ServerProcess()  # --address and --metrics-address on free ports, as flags
    try:
        assert server.http_address, server.log()
        for path in ("/v2/health/ready", "/v2/models/myops::scale_shift/ready"):
            with urllib.request.urlopen(f"http://{server.http_address}{path}", timeout=10) as r:
                assert r.status == 200, path
        import tritonclient.grpc as grpcclient
        client = grpcclient.InferenceServerClient(server.address)
        assert client.is_server_ready() and client.is_model_ready("myops::scale_shift")
        client.close()
    finally:
        server.close()
