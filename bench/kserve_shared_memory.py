"""Shared memory against gRPC bytes for a client on the server's host, with Triton's own
client (tritonclient.grpc, tritonclient.utils.shared_memory) against one myops-server
started with --allow-shared-memory.

Latency, one client, float32 scale_shift: per round, `--calls` calls of each kind back
to back, the kinds alternating which goes first; the median call per kind and round:
  grpc  the tensor in raw_input_contents, the result in raw_output_contents (as_numpy);
  shm   the input already in a registered region (where a co-located producer writes
        it), the output written by the server into another one and read as a view;
  shm+copy  the same, with the client copying its array into the input region first
        (set_shared_memory_region): what a client pays whose data is elsewhere;
  myops-grpc  the fastest gRPC path there is: myops_client (C++ core) calling myops.v1
        ScaleShift, the tensor's bytes in the request and the response
        (shared_memory="off");
  myops-shm  myops_client's own shared memory (shared_memory="on"): client.scale_shift
        copies the array into a pooled region, the server computes into the same
        region, the result is copied out into a new array;
  myops-auto  myops_client as users get it (shared_memory="auto"): regions from 64 KiB,
        inline bytes below;
  memcpy  the memory-bandwidth floor: one read and one write of the tensor (numpy
        copyto between two buffers of that size), in this process.
Prints the median over rounds of each round's ratios: grpc/shm and myops-grpc/shm
(speedups), memcpy/shm (the fraction of the floor reached), myops-grpc/myops-shm and
myops-grpc/myops-auto (what the myops client's own shared memory gains).

Throughput: `--clients` processes, each with its own client and regions, calls of
`--throughput-size` back to back for `--seconds`, shm and grpc one after the other
per round; GB/s of input tensor bytes.

    source scripts/env.sh && myops_build
    python bench/kserve_shared_memory.py [--rounds 5] [--sizes 1KiB,64MiB]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[1]
BUILD = pathlib.Path(os.environ.get("MYOPS_BUILD_DIR", REPO / "build"))
MODEL = "myops::scale_shift"
PARAMS = {"alpha": 2.0, "beta": 1.0}


def parse_size(text: str) -> int:
    m = re.fullmatch(r"(\d+)(B|KiB|MiB|GiB)", text)
    if not m:
        raise SystemExit(f"bad size {text!r} (e.g. 1KiB, 64MiB)")
    return int(m.group(1)) * {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}[m.group(2)]


def start_server():
    log = tempfile.NamedTemporaryFile(mode="w+", prefix="myops-server-")
    proc = subprocess.Popen([str(BUILD / "server" / "myops-server"), "--address", "127.0.0.1:0",
                             "--devices", "cpu", "--drain-delay", "0", "--allow-shared-memory",
                             "--max-message-bytes", str(256 << 20)],
                            stdout=log, stderr=subprocess.STDOUT)
    for _ in range(600):
        found = re.search(r"listening on (127\.0\.0\.1:\d+)", pathlib.Path(log.name).read_text())
        if found:
            return proc, found.group(1), log
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.kill()
    raise SystemExit("myops-server did not start:\n" + pathlib.Path(log.name).read_text())


class Caller:
    """One tritonclient.grpc client with an input and an output region of `nbytes`."""

    def __init__(self, address: str, nbytes: int):
        import tritonclient.grpc as grpcclient
        import tritonclient.utils.shared_memory as shm
        self.grpc, self.shm = grpcclient, shm
        self.client = grpcclient.InferenceServerClient(address)
        self.n = nbytes // 4
        self.x = np.arange(self.n, dtype=np.float32)
        tag = uuid.uuid4().hex[:10]
        self.regions = []
        for role in ("in", "out"):
            name, key = f"bench_{role}_{tag}", f"/myops_bench_{role}_{tag}"
            handle = shm.create_shared_memory_region(name, key, nbytes)
            self.client.register_system_shared_memory(name, key, nbytes)
            self.regions.append((name, handle))
        shm.set_shared_memory_region(self.regions[0][1], [self.x])
        self.inline_in = grpcclient.InferInput("x", [self.n], "FP32")
        self.inline_in.set_data_from_numpy(self.x)
        self.shm_in = grpcclient.InferInput("x", [self.n], "FP32")
        self.shm_in.set_shared_memory(self.regions[0][0], nbytes)
        self.shm_out = grpcclient.InferRequestedOutput("output__0")
        self.shm_out.set_shared_memory(self.regions[1][0], nbytes)
        self.nbytes = nbytes

    def grpc_call(self):
        return self.client.infer(MODEL, [self.inline_in], parameters=PARAMS).as_numpy("output__0")

    def shm_call(self, copy_in: bool = False):
        if copy_in:
            self.shm.set_shared_memory_region(self.regions[0][1], [self.x])
        self.client.infer(MODEL, [self.shm_in], outputs=[self.shm_out], parameters=PARAMS)
        return self.shm.get_contents_as_numpy(self.regions[1][1], np.float32, [self.n])

    def check(self):
        want = 2 * self.x[-1] + 1
        assert self.grpc_call()[-1] == want and self.shm_call()[-1] == want

    def close(self):
        for name, handle in self.regions:  # its own only: other clients' are in use
            self.client.unregister_system_shared_memory(name)
            self.shm.destroy_shared_memory_region(handle)
        self.client.close()


def median_call(fn, calls: int) -> float:
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def latency(address: str, nbytes: int, rounds: int, calls: int) -> dict:
    c = Caller(address, nbytes)
    c.check()
    src = np.ones(nbytes // 4, dtype=np.float32)
    dst = np.empty_like(src)
    sys.path.insert(0, str(BUILD / "python"))
    import myops_client
    mc = myops_client.Client(address, timeout=600.0, shared_memory="off")
    mc_shm = myops_client.Client(address, timeout=600.0, shared_memory="on")
    mc_auto = myops_client.Client(address, timeout=600.0)
    kinds = {
        "myops-grpc": lambda: mc.scale_shift(c.x, 2.0, 1.0),
        "myops-shm": lambda: mc_shm.scale_shift(c.x, 2.0, 1.0),
        "myops-auto": lambda: mc_auto.scale_shift(c.x, 2.0, 1.0),
        "grpc": c.grpc_call,
        "shm": c.shm_call,
        "shm+copy": lambda: c.shm_call(copy_in=True),
        "memcpy": lambda: np.copyto(dst, src),
    }
    for fn in kinds.values():  # warm up: connections, page tables of the mappings
        median_call(fn, 3)
    per_round = []
    names = list(kinds)
    for r in range(rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        per_round.append({k: median_call(kinds[k], calls) for k in order})
    c.close()
    for client in (mc, mc_shm, mc_auto):
        client.close()
    ratio = lambda a, b: statistics.median(x[a] / x[b] for x in per_round)  # noqa: E731
    spread = lambda a, b: (min(x[a] / x[b] for x in per_round),  # noqa: E731
                           max(x[a] / x[b] for x in per_round))
    return {
        "bytes": nbytes,
        "median_us": {k: statistics.median(x[k] for x in per_round) * 1e6 for k in names},
        "grpc/shm": ratio("grpc", "shm"), "grpc/shm range": spread("grpc", "shm"),
        "memcpy/shm": ratio("memcpy", "shm"), "memcpy/shm range": spread("memcpy", "shm"),
        "grpc/shm+copy": ratio("grpc", "shm+copy"),
        "myops-grpc/shm": ratio("myops-grpc", "shm"),
        "myops-grpc/shm range": spread("myops-grpc", "shm"),
        "myops-grpc/myops-shm": ratio("myops-grpc", "myops-shm"),
        "myops-grpc/myops-shm range": spread("myops-grpc", "myops-shm"),
        "myops-grpc/myops-auto": ratio("myops-grpc", "myops-auto"),
        "myops-grpc/myops-auto range": spread("myops-grpc", "myops-auto"),
    }


def throughput_worker(kind: str, address: str, nbytes: int, seconds: float, start, out):
    c = Caller(address, nbytes)
    call = c.grpc_call if kind == "grpc" else c.shm_call
    call()
    start.wait()
    done, end = 0, time.perf_counter() + seconds
    while time.perf_counter() < end:
        call()
        done += 1
    c.close()
    out.put(done)


def throughput(address: str, kind: str, clients: int, nbytes: int, seconds: float) -> float:
    ctx = multiprocessing.get_context("spawn")
    out, start = ctx.Queue(), ctx.Barrier(clients + 1)
    procs = [ctx.Process(target=throughput_worker,
                         args=(kind, address, nbytes, seconds, start, out))
             for _ in range(clients)]
    for p in procs:
        p.start()
    start.wait()
    t0 = time.perf_counter()
    total = sum(out.get(timeout=seconds + 120) for _ in procs)
    elapsed = max(seconds, time.perf_counter() - t0)
    for p in procs:
        p.join()
    return total * nbytes / elapsed / 1e9


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1KiB,64MiB")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=0, help="per kind and round (0: by size)")
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--throughput-size", default="16MiB")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--output", default=str(REPO / "bench" / "results" / "kserve_shm.json"))
    args = ap.parse_args()
    proc, address, log = start_server()
    report = {"latency": [], "throughput": {}}
    try:
        for size in args.sizes.split(","):
            nbytes = parse_size(size)
            calls = args.calls or (2000 if nbytes <= 1 << 20 else 10)
            row = latency(address, nbytes, args.rounds, calls)
            report["latency"].append(row)
            us = row["median_us"]
            rng = lambda k: f"({row[k + ' range'][0]:.3f}..{row[k + ' range'][1]:.3f})"  # noqa
            print(f"{size:>7}: " + ", ".join(f"{k} {v:.1f} us" for k, v in us.items()) +
                  f" | grpc/shm {row['grpc/shm']:.3f}x {rng('grpc/shm')}, myops-grpc/shm "
                  f"{row['myops-grpc/shm']:.3f}x {rng('myops-grpc/shm')}, memcpy/shm "
                  f"{row['memcpy/shm']:.3f} {rng('memcpy/shm')}, grpc/shm+copy "
                  f"{row['grpc/shm+copy']:.3f}x, myops-grpc/myops-shm "
                  f"{row['myops-grpc/myops-shm']:.3f}x {rng('myops-grpc/myops-shm')}, "
                  f"myops-grpc/myops-auto {row['myops-grpc/myops-auto']:.3f}x "
                  f"{rng('myops-grpc/myops-auto')}", flush=True)
        nbytes = parse_size(args.throughput_size)
        rates = {"shm": [], "grpc": []}
        for r in range(max(1, args.rounds // 2)):
            for kind in (("shm", "grpc") if r % 2 == 0 else ("grpc", "shm")):
                rates[kind].append(throughput(address, kind, args.clients, nbytes, args.seconds))
        report["throughput"] = {"clients": args.clients, "bytes": nbytes,
                                "GB/s": {k: statistics.median(v) for k, v in rates.items()},
                                "rounds": rates}
        gbs = report["throughput"]["GB/s"]
        print(f"throughput, {args.clients} clients x {args.throughput_size}: shm "
              f"{gbs['shm']:.2f} GB/s, grpc {gbs['grpc']:.2f} GB/s, "
              f"ratio {gbs['shm'] / gbs['grpc']:.2f}x", flush=True)
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    pathlib.Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    pathlib.Path(args.output).write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
