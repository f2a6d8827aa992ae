"""The one launcher of real server processes for the Python tests: myops-server (or
another program, such as the echo server) on a loopback address, its output in a
temporary log, its address parsed from its "listening on" line.

With MYOPS_TEST_LAUNCHER=HOST:PORT the process runs on the host, started by
tests/python/client/host_launcher.py (the installed-wheel test in a container, where no
server can run).
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

import pytest

from myops_testing.paths import SERVER
from myops_testing.ports import poll

_ADDRESS = r"((?:\d+\.){3}\d+:\d+)"


class ServerProcess:
    """A server process on HOST:PORT (port 0: any free one).

    myops-server by default, with --devices cpu and (`metrics`) /metrics on a free port
    before `flags`; given `binary`, that program with --address and `flags` only.
    """

    def __init__(self, *flags: str, host: str = "127.0.0.1", port: int = 0,
                 binary: pathlib.Path | None = None, metrics: bool = True) -> None:
        program = binary or SERVER
        if not program.exists():
            pytest.fail(f"{program} not found: build it first (source scripts/env.sh && myops_build)")
        self._log = tempfile.NamedTemporaryFile(mode="w+", prefix=f"{program.name}-", suffix=".log")
        argv = [str(program), "--address", f"{host}:{port}"]
        metrics = metrics and binary is None
        if binary is None:
            argv += ["--devices", "cpu"]
            if metrics:
                argv += ["--metrics-address", "127.0.0.1:0"]
        argv += list(flags)
        launcher = os.environ.get("MYOPS_TEST_LAUNCHER")
        self.process: subprocess.Popen[bytes] | HostProcess = (
            HostProcess(launcher, argv, self._log.name) if launcher else
            subprocess.Popen(argv, stdout=self._log, stderr=subprocess.STDOUT))
        self.pid = self.process.pid
        poll(lambda: "listening on" in self.log() or self.process.poll() is not None, 120)
        found = re.search(r"listening on " + _ADDRESS, self.log())
        metrics_found = re.search(r"metrics on " + _ADDRESS, self.log())
        if not found or (metrics and not metrics_found):
            self.kill()
            pytest.fail(f"{program.name} did not start:\n" + self.log())
        self.address = found.group(1)
        self.port = int(self.address.rsplit(":", 1)[1])
        self.metrics_address = metrics_found.group(1) if metrics_found else None
        # The HTTP/REST front end's address when --http-address was given, else None.
        http = re.search(r"http on " + _ADDRESS, self.log())
        self.http_address = http.group(1) if http else None

    def log(self) -> str:
        """What the process has printed so far (its startup line first)."""
        return pathlib.Path(self._log.name).read_text()

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

        def settled() -> bool:
            n = self.fds()
            if n != last[0]:
                last[:] = [n, time.monotonic()]
            return time.monotonic() - last[1] >= 1.0
        poll(settled, timeout=60, interval=0.1)
        return int(last[0])

    def send_signal(self, sig: int) -> None:
        self.process.send_signal(sig)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def terminate(self) -> int:
        """SIGTERM, then waits; returns the exit status."""
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail("the server did not exit after SIGTERM:\n" + self.log())

    def stop(self) -> None:
        """SIGTERM (SIGKILL after 20 s), then lets go of the log."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()
        self._log.close()

    def close(self) -> None:
        """SIGKILL, then lets go of the log."""
        self.kill()
        self._log.close()


class HostProcess:
    """A process that host_launcher.py started on the host; the part of
    subprocess.Popen's interface that ServerProcess uses."""

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


def quick_server(*flags: str, binary: pathlib.Path | None = None) -> ServerProcess:
    """myops-server as most client tests run it: stopped at once by SIGTERM (--drain-delay
    0, --grace-period 5), no metrics endpoint; or `binary` with just `flags`."""
    if binary is None:
        flags = ("--drain-delay", "0", "--grace-period", "5", *flags)
    return ServerProcess(*flags, binary=binary, metrics=False)
