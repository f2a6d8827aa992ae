"""The Python client against the C++ client and a plain grpcio client, in one run.

Starts one myops-server (CPU) and measures the p50 round trip of scale_shift on a
float32 payload (1 KiB and 16 MiB by default) at concurrency 1 for:
  - cpp:     the C++ client (build/bench/latency/myops-latency, ScaleShiftInto into a
             reused buffer; its JSON is read back);
  - python:  myops_client.Client.scale_shift (numpy in, new numpy array out);
  - python-ops: the generic call of the same operator through the operator table,
             client.ops.myops.scale_shift (schema binding in Python, the Call RPC);
  - grpcio:  the client a Python user would write: grpcio stubs generated from
             proto/myops/v1/myops.proto by grpcio-tools into a temp dir, x.tobytes()
             in, np.frombuffer(...).reshape(...) out;
  - tritonclient: tritonclient.grpc (Triton's client) on the same server's Open
             Inference Protocol endpoint: ModelInfer of model "myops::scale_shift", x
             as raw contents, alpha and beta as request parameters, as_numpy() out.
Each client runs in its own process (as the C++ tool does: grpcio's threads would
otherwise compete for the GIL and the cores), one after the other, in several rounds
with the order rotated; the reported p50 is the median of the rounds' p50s. Prints
ratios against the targets (python <= 1.3x cpp at 1 KiB, <= 1.15x at 16 MiB, and
faster than grpcio), the generic call's cost over the typed one (python-ops/python,
no target) and python/tritonclient (no target), and writes JSON (exit status 1 when a target is missed).

    source scripts/env.sh && myops_build   # server, myops-latency, build/python/myops_client
    python bench/python_client/bench.py [--sizes 1KiB,16MiB] [--rounds 5]
"""

from __future__ import annotations

import argparse
import importlib
import importlib.resources
import json
import os
import pathlib
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("MYOPS_BUILD_DIR", REPO / "build"))
TARGETS = {"1KiB": 1.3, "16MiB": 1.15}  # python p50 / cpp p50, at most
UNITS = {"GiB": 1 << 30, "MiB": 1 << 20, "KiB": 1 << 10, "B": 1}


def parse_size(text: str) -> int:
    for suffix, scale in UNITS.items():
        if text.endswith(suffix):
            return int(text[: -len(suffix)]) * scale
    return int(text)


def requests_for(size: int, max_requests: int, budget: int) -> int:
    """As myops-latency: min(max, budget / size), at least 10."""
    return max(10, min(max_requests, budget // size))


def start_server(extra_flags: tuple[str, ...] | list[str] = ()
                 ) -> tuple[subprocess.Popen, str, tempfile.NamedTemporaryFile]:
    log = tempfile.NamedTemporaryFile(mode="w+", prefix="myops-server-")
    proc = subprocess.Popen(
        [str(BUILD / "server" / "myops-server"), "--address", "127.0.0.1:0",
         "--devices", "cpu", "--max-message-bytes", str(512 << 20),
         "--drain-delay", "0", *extra_flags], stdout=log, stderr=subprocess.STDOUT)
    for _ in range(600):
        found = re.search(r"listening on (127\.0\.0\.1:\d+)",
                          pathlib.Path(log.name).read_text())
        if found:
            return proc, found.group(1), log
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.kill()
    sys.exit("myops-server did not start:\n" + pathlib.Path(log.name).read_text())


def grpcio_stubs(tmp: pathlib.Path) -> None:
    """Generates myops_pb2.py and myops_pb2_grpc.py into tmp, as top-level modules
    (the in-tree `myops` package would shadow a generated myops.v1 package)."""
    from grpc_tools import protoc
    include = importlib.resources.files("grpc_tools") / "_proto"
    proto_dir = REPO / "proto" / "myops" / "v1"
    rc = protoc.main(["protoc", f"-I{proto_dir}", f"-I{include}",
                      f"--python_out={tmp}", f"--grpc_python_out={tmp}",
                      str(proto_dir / "myops.proto")])
    if rc != 0:
        sys.exit("grpc_tools.protoc failed")


class GrpcioClient:
    """What a Python user writes with grpcio + numpy."""

    def __init__(self, address: str, pb2, pb2_grpc) -> None:
        import grpc
        options = [("grpc.max_send_message_length", 1 << 30),
                   ("grpc.max_receive_message_length", 1 << 30)]
        self._channel = grpc.insecure_channel(address, options=options)
        self._stub = pb2_grpc.MyopsStub(self._channel)
        self._pb2 = pb2

    def scale_shift(self, x: np.ndarray, alpha: float, beta: float):
        pb2 = self._pb2
        request = pb2.ScaleShiftRequest(
            input=pb2.Tensor(dtype=pb2.DTYPE_FLOAT32, shape=x.shape,
                             data=x.tobytes()), alpha=alpha, beta=beta)
        response = self._stub.ScaleShift(request, timeout=120)
        out = response.output
        return np.frombuffer(out.data, np.float32).reshape(tuple(out.shape))

    def close(self) -> None:
        self._channel.close()


class TritonClient:
    """Triton's gRPC client on the Open Inference Protocol endpoint."""

    def __init__(self, address: str) -> None:
        import tritonclient.grpc as grpcclient
        self._grpcclient = grpcclient
        self._client = grpcclient.InferenceServerClient(address)

    def scale_shift(self, x: np.ndarray, alpha: float, beta: float):
        tensor = self._grpcclient.InferInput("x", list(x.shape), "FP32")
        tensor.set_data_from_numpy(x)
        result = self._client.infer("myops::scale_shift", [tensor], client_timeout=120,
                                    parameters={"alpha": alpha, "beta": beta})
        return result.as_numpy("output__0")

    def close(self) -> None:
        self._client.close()


def run_cpp(address: str, sizes: list[str], args, out: pathlib.Path) -> dict:
    tool = BUILD / "bench" / "latency" / "myops-latency"
    subprocess.run(
        [str(tool), "--target", f"myops={address}", "--baseline", "myops",
         "--sizes", ",".join(sizes), "--max-requests", str(args.max_requests),
         "--budget-bytes", str(args.budget_bytes), "--warmup", str(args.warmup),
         "--json", str(out)], check=True, stdout=subprocess.DEVNULL)
    rows = json.loads(out.read_text())["results"]
    return {row["size"]: row["p50_us"] for row in rows}


def run_worker(args) -> None:
    """Measures one Python client (args.worker) and writes {size: p50_us}."""
    if args.worker in ("python", "python-ops"):
        sys.path.insert(0, args.package_dir or str(BUILD / "python"))
        import myops_client
        client = myops_client.Client(args.address, timeout=120.0)
        if args.worker == "python-ops":
            client.scale_shift = client.ops.myops.scale_shift
    elif args.worker == "tritonclient":
        client = TritonClient(args.address)
    else:
        sys.path.insert(0, args.stubs)
        client = GrpcioClient(args.address, importlib.import_module("myops_pb2"),
                              importlib.import_module("myops_pb2_grpc"))
    rng = np.random.default_rng(1)
    p50 = {}
    for size_text in args.sizes.split(","):
        size = parse_size(size_text)
        x = rng.standard_normal(size // 4).astype(np.float32)
        for _ in range(args.warmup):
            client.scale_shift(x, 2.0, 1.0)
        times = []
        for _ in range(requests_for(size, args.max_requests, args.budget_bytes)):
            start = time.perf_counter_ns()
            client.scale_shift(x, 2.0, 1.0)
            times.append(time.perf_counter_ns() - start)
        p50[size_text] = statistics.median(times) / 1e3
    client.close()
    pathlib.Path(args.out).write_text(json.dumps(p50))


def run_python(name: str, address: str, stubs: pathlib.Path, args,
               out: pathlib.Path) -> dict:
    subprocess.run(
        [sys.executable, __file__, "--worker", name, "--address", address,
         "--stubs", str(stubs), "--out", str(out), "--sizes", args.sizes,
         "--max-requests", str(args.max_requests), "--budget-bytes",
         str(args.budget_bytes), "--warmup", str(args.warmup)], check=True)
    return json.loads(out.read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1KiB,16MiB")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--max-requests", type=int, default=2000)
    parser.add_argument("--budget-bytes", type=int, default=1 << 30)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--json", default=str(REPO / "bench" / "results" /
                                              "python_client.json"))
    parser.add_argument("--worker", choices=["python", "python-ops", "grpcio", "tritonclient"],
                        help=argparse.SUPPRESS)
    parser.add_argument("--address", help=argparse.SUPPRESS)
    parser.add_argument("--stubs", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    # Where the python workers import myops_client from (wheel_ab.py: an unpacked wheel).
    parser.add_argument("--package-dir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        run_worker(args)
        return
    sizes = args.sizes.split(",")
    names = ["cpp", "python", "python-ops", "grpcio", "tritonclient"]

    proc, address, log = start_server()
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="myops-bench-"))
    try:
        grpcio_stubs(tmp)
        rounds = []
        for r in range(args.rounds):
            p50 = {}
            for name in names[r % len(names):] + names[:r % len(names)]:
                out = tmp / f"{name}{r}.json"
                if name == "cpp":
                    p50[name] = run_cpp(address, sizes, args, out)
                else:
                    p50[name] = run_python(name, address, tmp, args, out)
            rounds.append(p50)
            print(f"round {r + 1}: " + "  ".join(
                f"{size} cpp {p50['cpp'][size]:.1f} python "
                f"{p50['python'][size]:.1f} python-ops {p50['python-ops'][size]:.1f} "
                f"grpcio {p50['grpcio'][size]:.1f} "
                f"tritonclient {p50['tritonclient'][size]:.1f} us"
                for size in sizes), flush=True)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)

    # Ratios: the median over rounds of each round's ratio (the clients of one
    # round run close together in time, so machine noise hits them alike).
    results = []
    print(f"\n{'size':<8} {'cpp p50 us':>11} {'python p50 us':>14} "
          f"{'grpcio p50 us':>14} {'python/cpp':>11} {'target':>7} "
          f"{'python/grpcio':>14} {'ops/python':>11} {'python/triton':>14}")
    ok = True
    for size in sizes:
        med = {name: statistics.median(r[name][size] for r in rounds)
               for name in names}
        vs_cpp = statistics.median(r["python"][size] / r["cpp"][size]
                                   for r in rounds)
        vs_grpcio = statistics.median(r["python"][size] / r["grpcio"][size]
                                      for r in rounds)
        ops_vs_typed = statistics.median(r["python-ops"][size] / r["python"][size]
                                         for r in rounds)
        vs_triton = statistics.median(r["python"][size] / r["tritonclient"][size]
                                      for r in rounds)
        target = TARGETS.get(size)
        met = (target is None or vs_cpp <= target) and vs_grpcio < 1.0
        ok &= met
        print(f"{size:<8} {med['cpp']:>11.1f} {med['python']:>14.1f} "
              f"{med['grpcio']:>14.1f} {vs_cpp:>10.2f}x "
              f"{'<=%.2fx' % target if target else '':>7} {vs_grpcio:>13.2f}x"
              f" {ops_vs_typed:>10.2f}x {vs_triton:>13.2f}x"
              f"{'' if met else '  (target missed)'}")
        results.append({"size": size, "bytes": parse_size(size),
                        "p50_us": med, "python_vs_cpp": vs_cpp,
                        "python_vs_grpcio": vs_grpcio,
                        "python_ops_vs_python": ops_vs_typed,
                        "python_vs_tritonclient": vs_triton,
                        "target_python_vs_cpp": target, "met": met})
    out = pathlib.Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"benchmark": "python_client", "concurrency": 1,
                               "rounds": rounds, "results": results},
                              indent=2) + "\n")
    print(f"wrote {out}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
