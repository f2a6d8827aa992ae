"""Fault tests against the real myops-server binary: a kill -9 under load and a restart
on the same port; clients that die in the middle of streams and of large uploads; and
SIGTERM with streams open. No timed assertions: conditions are polled with generous
limits (myops_testing.poll).

Streams are driven by grpcio in child processes (stream_client.py, abrupt_client.py):
grpcio and myops_client (built on the system's gRPC) must not share a process, where
loading both aborts at random.
"""

from __future__ import annotations

import os
import pathlib
import random
import signal
import subprocess
import sys
import threading

import numpy as np
import pytest

from myops_testing import ServerProcess, free_port, poll

from fault_helpers import expected

myops_client = pytest.importorskip(
    "myops_client", reason="myops_client is not built (MYOPS_BUILD_PYTHON_CLIENT)")

HERE = pathlib.Path(__file__).resolve().parent


def child(script: str, *args: str, stdin=None) -> subprocess.Popen:
    """A client script of this folder in its own Python, with myops_testing importable."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(HERE.parent), *filter(None, [os.environ.get("PYTHONPATH")])]))
    return subprocess.Popen([sys.executable, str(HERE / script), *args], cwd=HERE, text=True,
                            stdout=subprocess.PIPE, stdin=stdin, env=env)


def check_unary(address: str) -> None:
    x = np.arange(-2048, 2048, dtype=np.float32)
    with myops_client.Client(address, timeout=60.0) as client:
        np.testing.assert_array_equal(client.scale_shift(x, 2.0, 1.0), expected(x))


def test_kill9_under_load_then_restart_on_the_same_port():
    port = free_port()
    server = ServerProcess("--drain-delay", "0", port=port)
    phase = {"name": "before"}  # before -> down -> restarted
    outcomes: list[tuple[str, int, str]] = []  # (phase, thread, "ok" | exception class)
    lock = threading.Lock()
    stop = threading.Event()

    def load(index: int) -> None:
        rng = np.random.default_rng(index)
        with myops_client.Client(server.address, timeout=30.0, retries=2,
                                 retry_backoff=0.05) as client:
            while not stop.is_set():
                x = rng.standard_normal(int(rng.integers(256, 1 << 18)), dtype=np.float32)
                started = phase["name"]
                try:
                    y = client.scale_shift(x, 2.0, 1.0)
                    np.testing.assert_array_equal(y, expected(x))
                    result = "ok"
                except myops_client.Error as e:
                    result = type(e).__name__
                # A call that began before the kill and ended after it counts as "down".
                ended = phase["name"]
                label = "before" if ended == "before" else ("down" if started == "before"
                                                            else started)
                with lock:
                    outcomes.append((label, index, result))

    def count(name, result=None, thread=None):
        with lock:
            return sum(1 for p, t, r in outcomes if p == name and (result is None or r == result)
                       and (thread is None or t == thread))

    threads = [threading.Thread(target=load, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    try:
        assert poll(lambda: all(count("before", "ok", i) >= 5 for i in range(4)))
        server.kill()  # SIGKILL: no drain, connections reset.
        phase["name"] = "down"
        assert poll(lambda: all(count("down", thread=i) >= 3 for i in range(4)))
        # While the server is down a call fails with UNAVAILABLE once its retries are spent...
        with myops_client.Client(server.address, timeout=30.0, retries=0) as client:
            with pytest.raises(myops_client.Unavailable):
                client.scale_shift(np.ones(4, np.float32), 2.0, 1.0)
        # ...and a patient client's call, started now, succeeds through its retries.
        patient: dict[str, object] = {}

        def patient_call():
            with myops_client.Client(server.address, timeout=120.0, retries=200,
                                     retry_backoff=0.05, max_retry_backoff=0.5) as client:
                patient["y"] = client.scale_shift(np.arange(8, dtype=np.float32), 2.0, 1.0)
        waiter = threading.Thread(target=patient_call)
        waiter.start()
        server.close()
        server = ServerProcess("--drain-delay", "0", port=port)
        assert server.port == port
        phase["name"] = "restarted"
        waiter.join(timeout=180)
        assert not waiter.is_alive()
        np.testing.assert_array_equal(patient["y"], expected(np.arange(8, dtype=np.float32)))
        # Every load thread recovers, on the channel it had before the kill.
        assert poll(lambda: all(count("restarted", "ok", i) >= 5 for i in range(4)), timeout=300)
    finally:
        stop.set()
        for t in threads:
            t.join()
        server.close()
    with lock:
        failures = {(p, r) for p, _, r in outcomes if r != "ok"}
    assert count("before") == count("before", "ok"), failures
    assert failures <= {("down", "Unavailable"), ("restarted", "Unavailable")}, failures
    assert count("down", "Unavailable") > 0


def test_clients_dying_mid_stream_and_mid_upload_leave_no_residue():
    server = ServerProcess("--drain-delay", "0", "--max-message-bytes", str(1 << 30))
    try:
        # Warm up (first connections, unary and streams), then take the idle baseline.
        check_unary(server.address)
        warm = child("stream_client.py", server.address, "2")
        assert warm.communicate(timeout=300)[0].splitlines()[-1] == "ok 8"
        assert poll(server.gauges_idle)
        baseline = server.stable_fds()

        def run_and_kill(args, marker, delay):
            process = child("abrupt_client.py", *args)
            try:
                assert process.stdout.readline().strip() == marker
                threading.Event().wait(delay)
            finally:
                process.send_signal(signal.SIGKILL)
                process.wait()

        rng = random.Random(5)
        for _ in range(3):
            run_and_kill(["streams", server.address], "ready", 0.2)
        for _ in range(6):  # The kill lands during or after the 256 MiB upload.
            run_and_kill(["upload", server.address, str(256 << 20)], "sending", rng.random())
        assert poll(server.gauges_idle), server.metrics()
        assert poll(lambda: server.fds() == baseline), (server.fds(), baseline)
        check_unary(server.address)  # And the server still serves.
    finally:
        server.close()


def test_sigterm_with_streams_open_drains_them():
    server = ServerProcess("--drain-delay", "1", "--grace-period", "120")
    streams = child("stream_client.py", server.address, "3", "--wait", stdin=subprocess.PIPE)
    try:
        assert streams.stdout.readline().strip() == "streaming"
        server.process.send_signal(signal.SIGTERM)

        # Wait until the server refuses new calls (the drain delay is over and it is
        # shutting down) while the streams are still open. A call that reaches gRPC just
        # as its shutdown begins is cancelled rather than refused: not served either.
        def refused() -> bool:
            with myops_client.Client(server.address, timeout=10.0, retries=0) as client:
                try:
                    client.server_info()
                    return False
                except (myops_client.Unavailable, myops_client.Cancelled):
                    return True
        assert poll(refused)
        assert server.process.poll() is None
        # The open streams are still served, then complete when their clients half-close.
        streams.stdin.write("more\n")
        streams.stdin.flush()
        out = streams.communicate(timeout=300)[0]
        assert streams.returncode == 0 and out.splitlines()[-1] == "ok 12", out
        assert server.terminate() == 0, server.log()
        assert "myops-server: stopped" in server.log()
    finally:
        streams.kill()
        server.close()
