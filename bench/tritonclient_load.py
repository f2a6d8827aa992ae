"""A closed-loop load of ModelInfer calls of myops::scale_shift made with Triton's own Python
client, tritonclient.grpc: the second client of bench/vs_triton.sh (--client tritonclient),
taking the subset of myops-loadtest's flags that the script passes and writing its JSON
shape (points[0]: requests_ok, errors, throughput_rps, latency_us p50/p99), so that the
script's rounds, slices, CPU accounting and table are the same for both clients.

    python bench/tritonclient_load.py --target HOST:PORT --protocol kserve --sizes 1KiB
        --concurrency 8 (--duration SECONDS | --requests N) [--warmup S] [--json FILE]

Each of --concurrency threads has its own client (channel) and sends one request after
the other: x of the payload's bytes as FP32 raw contents, alpha and beta as request
parameters, as myops-loadtest --protocol kserve does; every answer must carry one output
of x's size, else the run fails. tritonclient builds each request as a protobuf message
under the GIL: with several threads this client, not the server, sets the pace.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import threading
import time

import numpy as np

MODEL = "myops::scale_shift"
UNITS = {"": 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


def payload_bytes(text: str) -> int:
    found = re.fullmatch(r"(\d+)(B|KiB|MiB|GiB)?", text)
    if not found:
        raise SystemExit(f"--sizes {text}: expected a size such as 1KiB or 16MiB")
    n = int(found.group(1)) * UNITS[found.group(2) or ""]
    if n < 4 or n % 4:
        raise SystemExit(f"--sizes {text}: expected a whole number of FP32 elements")
    return n


def percentile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return 0.0
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--target", required=True)
    p.add_argument("--protocol", default="kserve", choices=["kserve"])
    p.add_argument("--sizes", required=True)
    p.add_argument("--concurrency", type=int, default=1)
    p.add_argument("--duration", type=float)
    p.add_argument("--requests", type=int)
    p.add_argument("--warmup", type=float, default=0.0)
    p.add_argument("--json")
    p.add_argument("--quiet", action="store_true")
    args = p.parse_args()
    if (args.duration is None) == (args.requests is None):
        raise SystemExit("give one of --duration and --requests")
    if args.concurrency < 1:
        raise SystemExit("--concurrency: at least 1")
    nbytes = payload_bytes(args.sizes)

    import tritonclient.grpc as grpcclient

    x = np.random.default_rng(0).standard_normal(nbytes // 4, dtype=np.float32)
    params = {"alpha": 2.0, "beta": 1.0}
    latencies: list[float] = []
    failures: list[str] = []
    lock = threading.Lock()
    left = [args.requests or 0]

    def worker(measure_until: float, warm_until: float) -> None:
        client = grpcclient.InferenceServerClient(args.target)
        inp = grpcclient.InferInput("x", [x.size], "FP32")
        inp.set_data_from_numpy(x)
        mine: list[float] = []
        try:
            while True:
                now = time.perf_counter()
                measuring = now >= warm_until
                if measuring:
                    if args.requests is not None:
                        with lock:
                            if left[0] <= 0:
                                break
                            left[0] -= 1
                    elif now >= measure_until:
                        break
                start = time.perf_counter()
                result = client.infer(MODEL, [inp], parameters=params)
                took = time.perf_counter() - start
                out = result.get_response().raw_output_contents
                if len(out) != 1 or len(out[0]) != nbytes:
                    raise RuntimeError(f"the answer has {len(out)} outputs, not one of {nbytes} bytes")
                if measuring:
                    mine.append(took)
        except Exception as e:  # noqa: BLE001 - reported as the run's failure
            with lock:
                failures.append(f"{type(e).__name__}: {e}")
        finally:
            client.close()
            with lock:
                latencies.extend(mine)

    start = time.perf_counter()
    warm_until = start + args.warmup
    measure_until = warm_until + (args.duration or 0)
    threads = [threading.Thread(target=worker, args=(measure_until, warm_until))
               for _ in range(args.concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - max(warm_until, start)
    if failures:
        print(f"tritonclient_load: {failures[0]}", file=sys.stderr)
        return 1
    lat_us = sorted(v * 1e6 for v in latencies)
    point = {"payload_bytes": nbytes, "concurrency": args.concurrency, "seconds": seconds,
             "requests_ok": len(lat_us), "errors": 0,
             "throughput_rps": len(lat_us) / seconds if seconds > 0 else 0.0,
             "latency_us": {"p50": percentile(lat_us, 0.50), "p99": percentile(lat_us, 0.99),
                            "mean": statistics.fmean(lat_us) if lat_us else 0.0,
                            "max": lat_us[-1] if lat_us else 0.0}}
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"client": "tritonclient.grpc", "points": [point]}, f)
    if not args.quiet:
        print(f"{args.sizes} x{args.concurrency}: {point['throughput_rps']:.1f} req/s, "
              f"p50 {point['latency_us']['p50']:.1f} us, p99 {point['latency_us']['p99']:.1f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
