"""Helpers of the Python client tests: a real myops-server (or echo_server)
process, reference math.

The server binary is $MYOPS_BUILD_DIR/server/myops-server (tests/python/conftest.py
puts $MYOPS_BUILD_DIR/python, where the build lays out myops_client, on sys.path).
Each server listens on 127.0.0.1:<free port> with --devices cpu; the port is parsed
from its "listening on" line; SIGTERM (with --drain-delay 0) stops it. With
MYOPS_TEST_LAUNCHER=HOST:PORT the process runs on the host, started by
host_launcher.py (the installed-wheel test in a container, where no server can run).
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import signal
import subprocess
import tempfile
import time
import urllib.request
from typing import Any

import numpy as np
import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]
BUILD = pathlib.Path(os.environ.get("MYOPS_BUILD_DIR", REPO / "build"))
SERVER = BUILD / "server" / "myops-server"
ECHO_SERVER = BUILD / "bench" / "echo_server" / "echo_server"

# Limits of the "small" server: 100 elements, 4 KiB messages.
SMALL_MAX_ELEMENTS = 100
SMALL_MAX_MESSAGE_BYTES = 4096


class Server:
    """A myops-server process on a free local port."""

    def __init__(self, *flags: str, binary: pathlib.Path | None = None) -> None:
        """myops-server with `flags`; or, given `binary`, that program with
        just --address and `flags` (e.g. ECHO_SERVER, bench/echo_server, which
        answers every call with its input)."""
        program = binary or SERVER
        if not program.exists():
            pytest.fail(f"{program} not found: build it first "
                        f"(source scripts/env.sh && myops_build)")
        self._log = tempfile.NamedTemporaryFile(
            mode="w+", prefix=f"{program.name}-", suffix=".log")
        if binary is None:
            flags = ("--devices", "cpu", "--drain-delay", "0",
                     "--grace-period", "5", *flags)
        argv = [str(program), "--address", "127.0.0.1:0", *flags]
        launcher = os.environ.get("MYOPS_TEST_LAUNCHER")
        self.process: subprocess.Popen[bytes] | HostProcess = (
            HostProcess(launcher, argv, self._log.name) if launcher else
            subprocess.Popen(argv, stdout=self._log, stderr=subprocess.STDOUT))
        self.address = self._wait_for_address()

    def _wait_for_address(self) -> str:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            text = pathlib.Path(self._log.name).read_text()
            found = re.search(r"listening on (127\.0\.0\.1:\d+)", text)
            if found:
                return found.group(1)
            if self.process.poll() is not None:
                break
            time.sleep(0.05)
        self.stop()
        pytest.fail("myops-server did not start:\n" +
                    pathlib.Path(self._log.name).read_text())

    def log_text(self) -> str:
        """What the server has printed so far (its startup line first)."""
        return pathlib.Path(self._log.name).read_text()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()


class HostProcess:
    """A process that host_launcher.py started on the host; the part of
    subprocess.Popen's interface that Server uses."""

    def __init__(self, launcher: str, argv: list[str], log: str) -> None:
        self._url = f"http://{launcher}/"
        self.pid = self._ask("start", argv=argv, log=log)["id"]

    def _ask(self, action: str, **body: Any) -> dict[str, Any]:
        request = urllib.request.Request(
            self._url + action, data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=120) as response:
            answer: dict[str, Any] = json.loads(response.read())
        return answer

    def poll(self) -> int | None:
        code: int | None = self._ask("poll", id=self.pid)["returncode"]
        return code

    def send_signal(self, sig: int) -> None:
        self._ask("signal", id=self.pid, signal=int(sig))

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def wait(self, timeout: float | None = None) -> int:
        code = self._ask("wait", id=self.pid, timeout=timeout or 3600)["returncode"]
        if code is None:
            raise subprocess.TimeoutExpired("myops-server", timeout or 3600)
        return int(code)


def reference(x: np.ndarray, alpha: float, beta: float) -> np.ndarray:
    """What the server computes, for alpha a power of two (bit-exact then).

    The kernel computes fma(alpha, x, beta) in x's dtype (float32, float64) or in
    float32 for float16/bfloat16, rounded once to x's dtype. When alpha is a power
    of two, alpha * x is exact, so numpy's separate multiply and add round once,
    at the add, exactly like the fma.
    """
    if x.dtype in (np.float32, np.float64):
        return x.dtype.type(alpha) * x + x.dtype.type(beta)
    wide = np.float32(alpha) * x.astype(np.float32) + np.float32(beta)
    return wide.astype(x.dtype)
