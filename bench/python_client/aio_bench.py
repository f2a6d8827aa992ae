"""Throughput of myops_client.aio (N concurrent awaits on one event loop) against the
blocking myops_client.Client driven by N threads, at the same concurrency N, in one run.

Starts one myops-server (CPU) and, for each N of --concurrency, runs two workers in
their own processes, one after the other (order alternating by round): "aio", N
coroutines each awaiting client.scale_shift in a loop on one asyncio loop and one
client; "threads", N threads each calling the blocking client.scale_shift in a loop on
one shared client. Each does --requests calls of a float32 payload of --size (1 KiB)
after a warmup, and reports calls per second. The ratio aio/threads is computed within
each round (both ran seconds apart) and its median over --rounds is printed; JSON goes
to bench/results/python_aio.json.

    source scripts/env.sh && myops_build --target myops-server myops_client_python
    python bench/python_client/aio_bench.py [--concurrency 1,16,64,256] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pathlib
import signal
import statistics
import subprocess
import sys
import threading
import time

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench import BUILD, REPO, parse_size, start_server  # noqa: E402


def run_threads(address: str, n: int, x: np.ndarray, requests: int) -> float:
    import myops_client
    client = myops_client.Client(address, timeout=120.0)
    per_thread = [requests // n + (i < requests % n) for i in range(n)]
    for _ in range(max(10, n)):  # warmup: connection, pools
        client.scale_shift(x, 2.0, 1.0)
    barrier = threading.Barrier(n + 1)

    def work(count: int) -> None:
        barrier.wait()
        for _ in range(count):
            client.scale_shift(x, 2.0, 1.0)

    threads = [threading.Thread(target=work, args=(c,)) for c in per_thread]
    for t in threads:
        t.start()
    barrier.wait()
    start = time.perf_counter()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    client.close()
    return requests / elapsed


def run_aio(address: str, n: int, x: np.ndarray, requests: int) -> float:
    import myops_client.aio

    async def main() -> float:
        async with myops_client.aio.Client(address, timeout=120.0) as client:
            for _ in range(max(10, n) // 10):  # warmup, 10 at a time
                await asyncio.gather(*(client.scale_shift(x, 2.0, 1.0)
                                       for _ in range(10)))
            per_task = [requests // n + (i < requests % n) for i in range(n)]

            async def work(count: int) -> None:
                for _ in range(count):
                    await client.scale_shift(x, 2.0, 1.0)

            start = time.perf_counter()
            await asyncio.gather(*(work(c) for c in per_task))
            return requests / (time.perf_counter() - start)

    return asyncio.run(main())


def worker(args) -> None:
    sys.path.insert(0, str(BUILD / "python"))
    x = np.random.default_rng(1).standard_normal(
        parse_size(args.size) // 4).astype(np.float32)
    run = run_aio if args.worker == "aio" else run_threads
    rate = run(args.address, args.n, x, args.requests)
    pathlib.Path(args.out).write_text(json.dumps(rate))


def measure(name: str, address: str, n: int, args, out: pathlib.Path) -> float:
    subprocess.run([sys.executable, __file__, "--worker", name, "--address",
                    address, "--n", str(n), "--out", str(out), "--size", args.size,
                    "--requests", str(args.requests)], check=True)
    return float(json.loads(out.read_text()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--concurrency", default="1,16,64,256")
    parser.add_argument("--size", default="1KiB")
    parser.add_argument("--requests", type=int, default=6000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", default=str(REPO / "bench" / "results" /
                                              "python_aio.json"))
    parser.add_argument("--worker", choices=["aio", "threads"],
                        help=argparse.SUPPRESS)
    parser.add_argument("--address", help=argparse.SUPPRESS)
    parser.add_argument("--n", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    levels = [int(n) for n in args.concurrency.split(",")]
    proc, address, log = start_server(["--max-inflight", "4096"])
    out = pathlib.Path(log.name + ".rate")
    rounds = []
    try:
        for r in range(args.rounds):
            rates = {}
            for n in levels:
                order = ["aio", "threads"] if r % 2 == 0 else ["threads", "aio"]
                rates[n] = {name: measure(name, address, n, args, out)
                            for name in order}
            rounds.append(rates)
            print(f"round {r + 1}: " + "  ".join(
                f"N={n} aio {v['aio']:.0f}/s threads {v['threads']:.0f}/s"
                for n, v in rates.items()), flush=True)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        log.close()
        out.unlink(missing_ok=True)

    results = []
    print(f"\n{'N':>5} {'aio calls/s':>12} {'threads calls/s':>16} "
          f"{'aio/threads':>12} {'range':>14}")
    for n in levels:
        ratios = [r[n]["aio"] / r[n]["threads"] for r in rounds]
        med = {name: statistics.median(r[n][name] for r in rounds)
               for name in ("aio", "threads")}
        ratio = statistics.median(ratios)
        print(f"{n:>5} {med['aio']:>12.0f} {med['threads']:>16.0f} "
              f"{ratio:>11.2f}x {min(ratios):>6.2f}-{max(ratios):.2f}x")
        results.append({"concurrency": n, "calls_per_s": med,
                        "aio_vs_threads": ratio, "ratios": ratios})
    path = pathlib.Path(args.json)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"benchmark": "python_aio", "size": args.size,
                                "requests": args.requests, "rounds": rounds,
                                "results": results}, indent=2, default=str) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
