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

import json
import statistics
import sys
import threading
import time

import numpy as np
from load_args import MODEL, parse


def percentile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return 0.0
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def main() -> int:
    args = parse(__doc__.split("\n\n")[0], requests=True)
    nbytes = args.payload_bytes

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
