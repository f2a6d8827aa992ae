"""The one launcher of the real NVIDIA Triton server for the tests and benchmarks: the
`tritonserver` binary (Triton 2.51) inside the PyPI wheel nvidia-pytriton, installed into
the virtualenv by scripts/bootstrap.sh; it runs on CPU without a GPU.

    from myops_testing.triton import TRITONSERVER, TritonProcess, backend_directory

    backends = backend_directory(tmp_path, {"scaleshift": BUILD / "bench" / "peers" /
                                            "triton_scale_shift"})
    with TritonProcess(model_repository, backends) as triton:   # waits until ready
        client = tritonclient.grpc.InferenceServerClient(triton.grpc_url)
        ...
    # or: triton = TritonProcess(...); triton.start(wait_ready=False) for a repository
    # whose models may fail to load; triton.stop() returns the exit status.

Its flags and why, found with this Triton on a machine without a GPU:
- --exit-on-error=false: by default a model that fails to load stops the server at start
  (exit status 1, "failed to load all models"); tests of failing models need it serving
  the others, and reporting the failure through the model's readiness.
- --strict-readiness stays at its default (true): /v2/health/ready answers 200 only once
  every model has loaded (400 while one failed), which is what start() waits for;
  /v2/health/live answers 200 as soon as the endpoints are up (start(wait_ready=False)).
- --strict-model-config is not given: 2.51's default is already false (configurations
  may be completed by the backend).
- --allow-gpu-metrics=false: on a machine without a GPU the GPU metrics fail to start
  (NVML, DCGM errors in the log); no test or benchmark reads them. --allow-metrics keeps
  the Prometheus endpoint (metrics_url) for the others.
- --http-address/--grpc-address/--metrics-address 127.0.0.1: Triton listens on 0.0.0.0
  by default.
The remaining CPU-only messages are harmless: the pinned memory pool and the CUDA memory
pool are disabled ("CUDA driver version is insufficient"), and "CudaDriverHelper has not
been initialized" is logged as an error.
"""

from __future__ import annotations

import importlib.util
import os
import pathlib
import signal
import subprocess
import sysconfig
import tempfile
import urllib.error
import urllib.request
from typing import IO, Mapping, Sequence

from myops_testing.ports import free_port, poll

# Health checks go straight to the loopback address, whatever http_proxy says.
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _find_tritonserver() -> pathlib.Path | None:
    """pytriton/tritonserver/bin/tritonserver in this interpreter's packages, else in
    $MYOPS_VENV's (the benchmarks may run under another Python)."""
    roots: list[pathlib.Path] = []
    try:
        spec = importlib.util.find_spec("pytriton")  # locates it without importing it
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.submodule_search_locations:
        roots += [pathlib.Path(p) for p in spec.submodule_search_locations]
    roots.append(pathlib.Path(sysconfig.get_paths()["purelib"]) / "pytriton")
    venv = os.environ.get("MYOPS_VENV")
    if venv:
        roots += sorted(pathlib.Path(venv).glob("lib/python3*/site-packages/pytriton"))
    for root in roots:
        binary = root / "tritonserver" / "bin" / "tritonserver"
        if binary.is_file() and os.access(binary, os.X_OK):
            return binary.resolve()
    return None


TRITONSERVER: pathlib.Path | None = _find_tritonserver()


def _distribution() -> tuple[pathlib.Path, pathlib.Path, str]:
    """(pytriton's tritonserver folder, its bundled libraries, the Python version "3.X" of
    the site-packages holding it): from .../lib/python3.X/site-packages/pytriton/
    tritonserver/bin/tritonserver."""
    if TRITONSERVER is None:
        raise RuntimeError("tritonserver not found: install nvidia-pytriton (scripts/bootstrap.sh)")
    server = TRITONSERVER.parents[1]
    site_packages = server.parents[1]
    version = site_packages.parent.name.removeprefix("python")
    return server, site_packages / "nvidia_pytriton.libs", version


def backend_directory(tmp: pathlib.Path, backends: Mapping[str, pathlib.Path]) -> pathlib.Path:
    """A folder to pass as --backend-directory: <dir>/<name>/libtriton_<name>.so for each
    of `backends` (name -> that library, or the folder holding it), and pytriton's own
    `python` backend, so that Python-backend models load too. Returns <tmp>/backends.

    Folders are linked whole, so that a library's $ORIGIN is its real folder (a library
    linked alone would see the link's folder as $ORIGIN, and its RUNPATH would break). The
    python backend is a real folder of links, since its stub
    (triton_python_backend_stub, which must sit beside libtriton_python.so) comes from
    pytriton's python_backend_stubs/<Python version>/; its libraries are found through
    LD_LIBRARY_PATH, which TritonProcess sets."""
    root = tmp / "backends"
    root.mkdir(parents=True, exist_ok=False)
    for name, path in backends.items():
        path = pathlib.Path(path).resolve()
        library = f"libtriton_{name}.so"
        if path.is_dir() or path.name == library:
            folder = path if path.is_dir() else path.parent
            if not (folder / library).is_file():
                raise FileNotFoundError(f"{folder / library} not found: build the backend first")
            (root / name).symlink_to(folder, target_is_directory=True)
        else:
            if not path.is_file():
                raise FileNotFoundError(f"{path} not found: build the backend first")
            (root / name).mkdir()
            (root / name / library).symlink_to(path)
    server, _, version = _distribution()
    python = root / "python"
    python.mkdir()
    for item in (server / "backends" / "python").iterdir():
        if item.is_file():
            (python / item.name).symlink_to(item)
    stub = server / "python_backend_stubs" / version / "triton_python_backend_stub"
    if stub.is_file():
        (python / stub.name).symlink_to(stub)
    return root


class TritonError(RuntimeError):
    """tritonserver did not start (the message ends with its log)."""


class TritonProcess:
    """tritonserver serving `model_repository` on free loopback ports (HTTP, gRPC,
    metrics), with the backends under `backend_dir` (see backend_directory), `extra_args`
    after its own flags (a later flag wins), `env` added to this process's environment,
    and its output in `log_path` (default: a temporary file, read back at stop)."""

    def __init__(self, model_repository: pathlib.Path, backend_dir: pathlib.Path | None = None,
                 extra_args: Sequence[str] = (), env: Mapping[str, str] | None = None,
                 log_path: pathlib.Path | None = None) -> None:
        self.model_repository = pathlib.Path(model_repository)
        self.backend_dir = pathlib.Path(backend_dir) if backend_dir is not None else None
        self.extra_args = list(extra_args)
        self.env = dict(env or {})
        self.log_path = pathlib.Path(log_path) if log_path is not None else None
        self.process: subprocess.Popen[bytes] | None = None
        self.http_port = self.grpc_port = self.metrics_port = 0
        self._log: IO[bytes] | None = None
        self._log_name = ""
        self._final_log: str | None = None

    # --- addresses -------------------------------------------------------------------
    @property
    def http_url(self) -> str:
        """HOST:PORT of the HTTP/REST endpoint, as tritonclient.http takes it."""
        return f"127.0.0.1:{self.http_port}"

    @property
    def grpc_url(self) -> str:
        """HOST:PORT of inference.GRPCInferenceService, as tritonclient.grpc takes it."""
        return f"127.0.0.1:{self.grpc_port}"

    @property
    def metrics_url(self) -> str:
        """The Prometheus endpoint, http://127.0.0.1:PORT/metrics."""
        return f"http://127.0.0.1:{self.metrics_port}/metrics"

    @property
    def pid(self) -> int:
        if self.process is None:
            raise RuntimeError("tritonserver was not started")
        return self.process.pid

    def log(self) -> str:
        """What tritonserver has printed so far (all of it, once stopped)."""
        if self._final_log is not None:
            return self._final_log
        if not self._log_name:
            return ""
        return pathlib.Path(self._log_name).read_text(errors="replace")

    # --- life cycle ------------------------------------------------------------------
    def start(self, wait_ready: bool = True, timeout: float = 120) -> TritonProcess:
        """Starts tritonserver and waits (at most `timeout` seconds) until every model is
        ready, or with wait_ready=False until the server is live (models may have failed
        to load). Raises TritonError with the log when it exits or does not get there.
        Ports taken by another process between their choice and the bind: tried again."""
        if self.process is not None:
            raise RuntimeError("tritonserver was already started")
        if TRITONSERVER is None:
            raise TritonError("tritonserver not found: install nvidia-pytriton (scripts/bootstrap.sh)")
        for attempt in range(3):
            self._launch()
            outcome = self._wait(wait_ready, timeout)
            if outcome == "up":
                return self
            text = self.log()
            self._close(signal.SIGKILL, 10)
            if outcome == "exited" and "already in use" in text and attempt < 2:
                self.process = None
                self._final_log = None
                continue
            what = "exited during start" if outcome == "exited" else (
                f"was not {'ready' if wait_ready else 'live'} after {timeout} s")
            raise TritonError(f"tritonserver {what}; its log ends:\n" + "\n".join(text.splitlines()[-60:]))
        raise AssertionError("unreachable")

    def _launch(self) -> None:
        assert TRITONSERVER is not None
        self.http_port, self.grpc_port, self.metrics_port = (free_port() for _ in range(3))
        argv = [str(TRITONSERVER), f"--model-repository={self.model_repository}"]
        if self.backend_dir is not None:
            argv.append(f"--backend-directory={self.backend_dir}")
        argv += [f"--http-port={self.http_port}", f"--grpc-port={self.grpc_port}",
                 f"--metrics-port={self.metrics_port}", "--http-address=127.0.0.1",
                 "--grpc-address=127.0.0.1", "--metrics-address=127.0.0.1", "--allow-metrics=true",
                 "--allow-gpu-metrics=false", "--log-verbose=0", "--exit-on-error=false",
                 *self.extra_args]
        env = os.environ.copy()
        _, libs, _ = _distribution()
        # As pytriton runs it: its bundled libraries on the library path (for backends
        # linked into the backend folder, whose $ORIGIN is not theirs) and a Python of the
        # virtualenv first on PATH: the python backend's stub embeds the interpreter and
        # finds its packages from the `python3` on PATH. That is <venv>/triton-python
        # (scripts/bootstrap.sh), with numpy below 2 and the virtualenv's other packages:
        # under numpy 2 this stub hands models zeros and sends empty outputs.
        env["LD_LIBRARY_PATH"] = ":".join(p for p in (env.get("LD_LIBRARY_PATH"), str(libs)) if p)
        venv = TRITONSERVER.parents[6]
        for python_bin in (venv / "triton-python" / "bin", venv / "bin"):
            if python_bin.is_dir():
                env["PATH"] = f"{python_bin}{os.pathsep}{env.get('PATH', '')}"
                break
        env.update(self.env)
        if self.log_path is not None:
            self._log = open(self.log_path, "wb")
            self._log_name = str(self.log_path)
        else:
            handle, self._log_name = tempfile.mkstemp(prefix="tritonserver-", suffix=".log")
            self._log = os.fdopen(handle, "wb")
        self._final_log = None
        self.process = subprocess.Popen(argv, stdout=self._log, stderr=subprocess.STDOUT, env=env)

    def _wait(self, wait_ready: bool, timeout: float) -> str:
        """"up", "exited" or "timeout"."""
        url = f"http://{self.http_url}/v2/health/{'ready' if wait_ready else 'live'}"
        assert self.process is not None
        process = self.process

        def answered() -> bool:
            if process.poll() is not None:
                return True
            try:
                with _DIRECT.open(url, timeout=5) as response:
                    return bool(response.status == 200)
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                return False  # not listening yet, or not ready (400)

        if not poll(answered, timeout=timeout, interval=0.05):
            return "timeout"
        return "exited" if process.poll() is not None else "up"

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60) -> int:
        """Sends `sig` and waits `timeout` seconds for the exit (then SIGKILL); returns the
        exit status (negative: the signal that ended it). Idempotent."""
        if self.process is None:
            raise RuntimeError("tritonserver was not started")
        return self._close(sig, timeout)

    def _close(self, sig: int, timeout: float) -> int:
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self._log is not None:
            self._log.close()
            self._log = None
            self._final_log = pathlib.Path(self._log_name).read_text(errors="replace")
            if self.log_path is None:
                os.unlink(self._log_name)
        code = self.process.returncode
        assert code is not None
        return int(code)

    def __enter__(self) -> TritonProcess:
        if self.process is None:
            self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process is not None:
            self._close(signal.SIGTERM, 60)
