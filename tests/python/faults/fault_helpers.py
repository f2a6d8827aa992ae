"""Helpers of the fault tests: a real myops-server process that can be killed and
restarted on the same port, its /metrics and its /proc counters, grpcio stubs for the
streaming RPC (generated from proto/ at import, as bench/peers does), and polling.

The server binary is $MYOPS_BUILD_DIR/server/myops-server. Nothing here asserts on
time: poll() waits for a condition with a generous limit and returns whether it held.
"""

from __future__ import annotations

import importlib
import os
import pathlib
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import numpy as np
import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]
BUILD = pathlib.Path(os.environ.get("MYOPS_BUILD_DIR", REPO / "build"))
SERVER = BUILD / "server" / "myops-server"


def load_stubs():
    """myops.v1 protobuf and gRPC modules, generated into a temporary directory. The
    proto is copied under the Python package name `myops_fault_v1` (the protobuf package
    stays myops.v1): `myops` is taken by the operator package on sys.path."""
    from grpc_tools import protoc  # Only the child processes need grpcio.
    if "myops_fault_v1.myops_pb2" in sys.modules:
        return sys.modules["myops_fault_v1.myops_pb2"], sys.modules["myops_fault_v1.myops_pb2_grpc"]
    out = pathlib.Path(tempfile.mkdtemp(prefix="myops_fault_stubs_"))
    (out / "myops_fault_v1").mkdir()
    shutil.copy(REPO / "proto" / "myops" / "v1" / "myops.proto", out / "myops_fault_v1")
    args = ["protoc", f"-I{out}", f"--python_out={out}", f"--grpc_python_out={out}",
            "myops_fault_v1/myops.proto"]
    if protoc.main(args) != 0:
        raise RuntimeError("grpc_tools.protoc failed")
    sys.path.insert(0, str(out))
    return (importlib.import_module("myops_fault_v1.myops_pb2"),
            importlib.import_module("myops_fault_v1.myops_pb2_grpc"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def poll(condition, timeout: float = 120.0, interval: float = 0.05) -> bool:
    """Calls condition() until it is true or `timeout` seconds passed; returns the last value."""
    deadline = time.monotonic() + timeout
    while True:
        if condition():
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(interval)


class ServerProcess:
    """myops-server on 127.0.0.1:`port` (0: any) with /metrics on a free port."""

    def __init__(self, *flags: str, port: int = 0) -> None:
        if not SERVER.exists():
            pytest.fail(f"{SERVER} not found: build the server first")
        self.flags = flags
        self._log = tempfile.NamedTemporaryFile(mode="w+", prefix="myops-fault-", suffix=".log")
        self.process = subprocess.Popen(
            [str(SERVER), "--address", f"127.0.0.1:{port}", "--devices", "cpu",
             "--metrics-address", "127.0.0.1:0", *flags],
            stdout=self._log, stderr=subprocess.STDOUT)
        self.pid = self.process.pid
        self.address, self.metrics_address = self._wait_for_startup()
        # The HTTP/REST front end's address when --http-address was given, else None.
        http = re.search(r"http on (127\.0\.0\.1:\d+)", self.log())
        self.http_address = http.group(1) if http else None
        self.port = int(self.address.rsplit(":", 1)[1])

    def log(self) -> str:
        return pathlib.Path(self._log.name).read_text()

    def _wait_for_startup(self):
        def started():
            return "listening on" in self.log() or self.process.poll() is not None
        poll(started, timeout=120)
        found = re.search(r"listening on (127\.0\.0\.1:\d+)", self.log())
        metrics = re.search(r"metrics on (127\.0\.0\.1:\d+)", self.log())
        if not found or not metrics:
            self.kill()
            pytest.fail("myops-server did not start:\n" + self.log())
        return found.group(1), metrics.group(1)

    def metrics(self) -> dict[str, float]:
        """Every sample of GET /metrics, keyed by name{labels}."""
        with urllib.request.urlopen(f"http://{self.metrics_address}/metrics", timeout=30) as r:
            text = r.read().decode()
        samples = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                key, value = line.rsplit(" ", 1)
                samples[key] = float(value)
        return samples

    def gauges_idle(self) -> bool:
        """No request in flight and, where the server reports them, no memory held and
        no stream open."""
        m = self.metrics()
        return (m["myops_inflight_requests"] == 0 and m.get("myops_memory_held_bytes", 0) == 0
                and m.get("myops_open_streams", 0) == 0)

    def fds(self) -> int:
        return len(os.listdir(f"/proc/{self.pid}/fd"))

    def stable_fds(self) -> int:
        """The fd count once it has not changed for a second (connections settle)."""
        last = [self.fds(), time.monotonic()]

        def settled():
            n = self.fds()
            if n != last[0]:
                last[:] = [n, time.monotonic()]
            return time.monotonic() - last[1] >= 1.0
        poll(settled, timeout=60, interval=0.1)
        return last[0]

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def terminate(self) -> int:
        """SIGTERM; returns the exit status."""
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail("myops-server did not exit after SIGTERM:\n" + self.log())

    def close(self) -> None:
        self.kill()
        self._log.close()


def expected(x: np.ndarray) -> np.ndarray:
    """scale_shift(x, 2, 1) for float32 x: 2 * x is exact, so this rounds like the fma."""
    return x * np.float32(2) + np.float32(1)
