"""Small-request throughput of the Open Inference Protocol over REST against gRPC, on one
myops-server, with Triton's own clients for both (tritonclient.http, JSON and binary
tensor data; tritonclient.grpc): closed loop, `--clients` processes each with one client
sending 1 KiB float32 scale_shift requests back to back for `--seconds`, the three kinds
alternating over `--rounds` rounds (machine noise then hits them alike). Prints req/s per
round and the median ratios REST/gRPC; writes JSON.

    source scripts/env.sh && myops_build
    python bench/kserve_rest_vs_grpc.py [--clients 4] [--seconds 3] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import pathlib
import re
import signal
import statistics
import subprocess
import tempfile
import time

import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[1]
BUILD = pathlib.Path(os.environ.get("MYOPS_BUILD_DIR", REPO / "build"))
MODEL = "myops::scale_shift"
KINDS = ("grpc", "rest-json", "rest-binary")


def start_server():
    log = tempfile.NamedTemporaryFile(mode="w+", prefix="myops-server-")
    proc = subprocess.Popen([str(BUILD / "server" / "myops-server"), "--address", "127.0.0.1:0",
                             "--http-address", "127.0.0.1:0", "--devices", "cpu",
                             "--drain-delay", "0"], stdout=log, stderr=subprocess.STDOUT)
    for _ in range(600):
        text = pathlib.Path(log.name).read_text()
        grpc_addr = re.search(r"listening on (127\.0\.0\.1:\d+)", text)
        http_addr = re.search(r"http on (127\.0\.0\.1:\d+)", text)
        if grpc_addr and http_addr:
            return proc, grpc_addr.group(1), http_addr.group(1), log
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.kill()
    raise SystemExit("myops-server did not start:\n" + pathlib.Path(log.name).read_text())


def worker(kind: str, address: str, seconds: float, out) -> None:
    """Requests completed by one client of `kind` in `seconds`."""
    x = np.arange(256, dtype=np.float32)  # 1 KiB
    if kind == "grpc":
        import tritonclient.grpc as client_lib
    else:
        import tritonclient.http as client_lib
    client = client_lib.InferenceServerClient(address)
    tensor = client_lib.InferInput("x", [256], "FP32")
    if kind == "grpc":
        tensor.set_data_from_numpy(x)
    else:
        tensor.set_data_from_numpy(x, binary_data=(kind == "rest-binary"))
    outputs = None
    if kind != "grpc":
        outputs = [client_lib.InferRequestedOutput("output__0",
                                                   binary_data=(kind == "rest-binary"))]
    params = {"alpha": 2.0, "beta": 1.0}
    for _ in range(20):  # warm up
        client.infer(MODEL, [tensor], outputs=outputs, parameters=params)
    done, end = 0, time.perf_counter() + seconds
    while time.perf_counter() < end:
        result = client.infer(MODEL, [tensor], outputs=outputs, parameters=params)
        done += 1
    assert result.as_numpy("output__0")[3] == 7.0
    client.close()
    out.put(done)


def measure(kind: str, address: str, clients: int, seconds: float) -> float:
    out = multiprocessing.Queue()
    procs = [multiprocessing.Process(target=worker, args=(kind, address, seconds, out))
             for _ in range(clients)]
    for p in procs:
        p.start()
    total = sum(out.get(timeout=seconds + 120) for _ in procs)
    for p in procs:
        p.join()
    return total / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", default=str(REPO / "bench" / "results" /
                                              "kserve_rest_vs_grpc.json"))
    args = parser.parse_args()
    proc, grpc_addr, http_addr, log = start_server()
    rounds = []
    try:
        for r in range(args.rounds):
            order = KINDS[r % len(KINDS):] + KINDS[:r % len(KINDS)]
            rps = {k: measure(k, grpc_addr if k == "grpc" else http_addr, args.clients,
                              args.seconds) for k in order}
            rounds.append(rps)
            print(f"round {r + 1}: " + "  ".join(f"{k} {rps[k]:.0f} req/s" for k in KINDS),
                  flush=True)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        log.close()
    ratios = {k: statistics.median(r[k] / r["grpc"] for r in rounds) for k in KINDS[1:]}
    print("median REST/gRPC: " + "  ".join(f"{k} {v:.2f}x" for k, v in ratios.items()))
    out = pathlib.Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"benchmark": "kserve_rest_vs_grpc", "clients": args.clients,
                               "payload_bytes": 1024, "rounds": rounds,
                               "median_vs_grpc": ratios}, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
