"""The myops backend through Triton's lifecycle: SIGTERM under load answers every request
Triton accepted (nothing lost, nothing hung). (A KIND_GPU instance on a machine without a
GPU is refused by Triton itself before the backend sees it; the backend's GPU runner set-up
is tested in tests/server/runtime/call_runner_test.cc.)"""

from __future__ import annotations

import signal
import threading

import numpy as np
import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException

from conftest import BACKEND, write_repository
from myops_testing.triton import TritonProcess, backend_directory

SCALE_SHIFT = """
    backend: "myops"
    instance_group [ { kind: KIND_CPU count: 2 } ]
    parameters { key: "op" value { string_value: "myops::scale_shift" } }
"""


def test_sigterm_under_load_loses_no_request(triton, tmp_path):
    # `triton` (the module's server) makes the same skips; this test runs its own server.
    models = write_repository(tmp_path / "models", {"scale_shift": SCALE_SHIFT})
    process = TritonProcess(models, backend_directory(tmp_path / "backends", {"myops": BACKEND}),
                            log_path=tmp_path / "triton.log")
    process.start()
    x = np.arange(256 * 1024, dtype=np.float32)  # 1 MiB: calls that take a while
    expected = x * np.float32(2.0) + np.float32(1.0)
    outcomes: list[str] = []
    lock = threading.Lock()
    answered = threading.Semaphore(0)  # released once per thread, at its first answer

    def client_loop():
        first = True
        client = grpcclient.InferenceServerClient(process.grpc_url)
        inp = grpcclient.InferInput("x", [x.size], "FP32")
        inp.set_data_from_numpy(x)
        while True:
            try:
                r = client.infer("scale_shift", [inp], parameters={"alpha": 2.0, "beta": 1.0},
                                 client_timeout=60)
                np.testing.assert_array_equal(r.as_numpy("output__0"), expected)
                outcome = "ok"
            except InferenceServerException as e:
                # Once Triton stops, it unloads the model after its requests in flight are
                # answered: later ones find no model (NOT_FOUND) or no server (UNAVAILABLE).
                # Anything else is a request lost on the way (DEADLINE_EXCEEDED: one hung).
                refused = e.status() in ("StatusCode.NOT_FOUND", "StatusCode.UNAVAILABLE")
                outcome = "refused" if refused else f"lost: {e.status()} {e.message()}"
            with lock:
                outcomes.append(outcome)
            if first:
                answered.release()
                first = False
            if outcome != "ok":
                return

    threads = [threading.Thread(target=client_loop) for _ in range(8)]
    for t in threads:
        t.start()
    for _ in threads:  # load on every connection before the signal
        assert answered.acquire(timeout=60)
    code = process.stop(signal.SIGTERM, timeout=60)
    for t in threads:
        t.join(90)
        assert not t.is_alive(), "a client never got an answer"
    assert code == 0, process.log()[-2000:]
    assert outcomes.count("ok") >= len(threads), outcomes
    # Every thread ended on a refusal after the server went, and each request it had sent
    # before was answered in full.
    assert outcomes.count("refused") == len(threads), outcomes
    assert len(outcomes) == outcomes.count("ok") + len(threads), outcomes
