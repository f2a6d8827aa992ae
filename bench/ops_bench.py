"""Kernel benchmark for myops.scale_shift on CPU (and CUDA when present).

For a 64 MiB tensor (float32 and bfloat16), with one thread and with all threads, it
measures GB/s (bytes read + written) of:
  scale_shift       myops.scale_shift(x, a, b)            (one fused pass)
  aten_axpb         a * x + b                              (two ATen kernels)
  clone             x.clone()                              (same bytes moved: the floor)
in two modes: "alloc" (each call allocates its result, as written above) and "out"
(preallocated outputs: scale_shift.out / torch.mul+add with out= / out.copy_(x)), which
isolates the kernels from page-fault cost. Candidates run round-robin so drift hits all
alike; the median of the repeats is reported. Prints a table with ratios, writes JSON.

On CUDA, "clone" is a device-to-device copy.

Usage: python bench/ops_bench.py [--size-mib 64] [--repeats 15] [--json PATH] [--device cpu|cuda]
"""

import argparse
import json
import os
import platform
import statistics
import time

import torch

import myops


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def candidates(x, a, b, mode):
    if mode == "alloc":
        return {
            "scale_shift": lambda: torch.ops.myops.scale_shift(x, a, b),
            "aten_axpb": lambda: a * x + b,
            "clone": lambda: x.clone(),
        }
    y = torch.empty_like(x)
    t = torch.empty_like(x)
    return {
        "scale_shift": lambda: torch.ops.myops.scale_shift.out(x, a, b, out=y),
        "aten_axpb": lambda: torch.add(torch.mul(x, a, out=t), b, out=y),
        "clone": lambda: y.copy_(x),
    }


def measure(fns, device, repeats, inner, warmup=3):
    """Median seconds per call; each sample times `inner` back-to-back calls (GPU launches
    are asynchronous, so one call per sample would mostly time the synchronization)."""
    times = {name: [] for name in fns}
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    _sync(device)
    for _ in range(repeats):
        for name, fn in fns.items():
            _sync(device)
            t0 = time.perf_counter()
            for _ in range(inner):
                fn()
            _sync(device)
            times[name].append((time.perf_counter() - t0) / inner)
    return {name: statistics.median(ts) for name, ts in times.items()}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size-mib", type=float, default=64)
    p.add_argument("--repeats", type=int, default=15)
    p.add_argument("--device", default="cpu")
    p.add_argument("--inner", type=int, default=None, help="calls per sample (default: 1 on CPU, 50 on CUDA)")
    p.add_argument("--json", default="bench/results/ops_bench.json")
    args = p.parse_args()
    device = torch.device(args.device)
    inner = args.inner or (50 if device.type == "cuda" else 1)
    all_threads = torch.get_num_threads()
    thread_counts = [1, all_threads] if device.type == "cpu" else [all_threads]
    a, b = 1.5, -0.25
    rows = []
    for dtype in (torch.float32, torch.bfloat16):
        numel = int(args.size_mib * 2**20) // torch.tensor([], dtype=dtype).element_size()
        x = torch.randn(numel, dtype=torch.float32).to(dtype=dtype, device=device)
        moved = 2 * x.numel() * x.element_size()
        for threads in thread_counts:
            torch.set_num_threads(threads)
            for mode in ("out", "alloc"):
                secs = measure(candidates(x, a, b, mode), device, args.repeats, inner)
                gbs = {k: moved / v / 1e9 for k, v in secs.items()}
                rows.append({
                    "dtype": str(dtype).removeprefix("torch."), "threads": threads, "mode": mode,
                    "bytes_moved": moved, "seconds": secs, "gb_per_s": gbs,
                    "speedup_vs_aten_axpb": gbs["scale_shift"] / gbs["aten_axpb"],
                    "fraction_of_clone": gbs["scale_shift"] / gbs["clone"],
                })
    torch.set_num_threads(all_threads)

    print(f"myops.scale_shift on {device} ({args.size_mib:g} MiB, median of {args.repeats}, GB/s = read+write)")
    print(f"{'dtype':9} {'thr':>3} {'mode':5} {'scale_shift':>11} {'a*x+b':>8} {'clone':>8} {'vs a*x+b':>9} {'vs clone':>9}")
    for r in rows:
        g = r["gb_per_s"]
        print(f"{r['dtype']:9} {r['threads']:>3} {r['mode']:5} {g['scale_shift']:11.2f} {g['aten_axpb']:8.2f} "
              f"{g['clone']:8.2f} {r['speedup_vs_aten_axpb']:8.2f}x {r['fraction_of_clone']:8.2f}x")
    report = {
        "benchmark": "ops_bench", "device": str(device), "torch": torch.__version__,
        "cpu_capability": torch.backends.cpu.get_cpu_capability(), "machine": platform.machine(),
        "threads_all": all_threads, "size_mib": args.size_mib, "repeats": args.repeats,
        "targets": {"speedup_vs_aten_axpb": 1.6, "fraction_of_clone": 0.85}, "rows": rows,
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(report, f, indent=2)
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
