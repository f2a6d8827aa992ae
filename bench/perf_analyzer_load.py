"""A closed-loop load of ModelInfer calls of myops::scale_shift made by Triton's own load
generator, perf_analyzer 2.51.0 (bench/peers/perf_analyzer.sh installs it): the third
client of bench/vs_triton.sh (--client perf_analyzer), taking the subset of
myops-loadtest's flags that the script passes and writing its JSON shape (points[0]:
requests_ok, errors, throughput_rps, latency_us p50/p99), so that the script's rounds,
slices, CPU accounting and table are the same for every client.

    python bench/perf_analyzer_load.py --target HOST:PORT --protocol kserve --sizes 1KiB
        --concurrency 8 --duration SECONDS [--warmup S] [--json FILE]

perf_analyzer runs in its default mode: --concurrency threads, each sending one request
after the other over gRPC (x: random FP32 of the payload's size, alpha and beta as request
parameters, as myops-loadtest --protocol kserve sends them). It measures three windows of
a third of --duration each (at least a second; longer where no request completes in one),
back to back, and reports their throughput and latency percentiles, which this passes on
(no --requests: perf_analyzer's windows by count still last its measurement interval).
requests_ok is what the server counted as answered over the whole run (its
ModelStatistics before and after), so that the CPU the script divides by it covers the
same calls; perf_analyzer fails the run on any error.
"""

from __future__ import annotations

import csv
import json
import os
import pathlib
import subprocess
import sys
import tempfile

from load_args import MODEL, parse

WINDOWS = 3  # perf_analyzer's fewest windows to call a measurement stable
INSTALL = pathlib.Path(__file__).resolve().parent / "peers" / "perf_analyzer.sh"


def answered(target: str) -> int:
    """Successful inferences of MODEL the server has counted (ModelStatistics)."""
    import tritonclient.grpc as grpcclient

    with grpcclient.InferenceServerClient(target) as client:
        stats = client.get_inference_statistics(MODEL, as_json=True)
    return sum(int(m["inference_stats"]["success"].get("count", 0)) for m in stats["model_stats"])


def main() -> int:
    args = parse(__doc__.split("\n\n")[0], requests=False)
    nbytes = args.payload_bytes
    binary = os.environ.get("MYOPS_PERF_ANALYZER") or subprocess.run(
        [str(INSTALL)], check=True, capture_output=True, text=True).stdout.strip()

    with tempfile.TemporaryDirectory() as tmp:
        report = pathlib.Path(tmp) / "report.csv"
        base = [binary, "-m", MODEL, "-i", "grpc", "-u", args.target,
                "--concurrency-range", f"{args.concurrency}:{args.concurrency}",
                "--shape", f"x:{nbytes // 4}",
                "--request-parameter", "alpha:2.0:double",
                "--request-parameter", "beta:1.0:double",
                "--max-trials", str(WINDOWS), "--stability-percentage", "1000"]

        def measure(seconds: float, csv_report: pathlib.Path | None = None) -> str:
            """perf_analyzer's three windows over `seconds`, each at least a second. It
            fails a window in which no request completed (64 MiB with 8 of its clients
            takes it seconds a request): then the windows double, up to 4 times."""
            interval = max(1000, round(seconds * 1000 / WINDOWS))
            for attempt in range(5):
                cmd = base + ["--measurement-interval", str(interval)]
                if csv_report is not None:
                    cmd += ["-f", str(csv_report)]
                done = run(cmd)
                said = done.stdout + done.stderr
                if done.returncode == 0:
                    return done.stdout
                if "No valid requests recorded" not in said or attempt == 4:
                    raise SystemExit(f"perf_analyzer exited {done.returncode}:\n{said}")
                interval *= 2
            raise AssertionError("unreachable")

        if args.warmup > 0:
            measure(args.warmup)
        # Every request the server answers from here on counts, those of windows too
        # short included: the script's CPU covers them too.
        before = answered(args.target)
        out = measure(args.duration, report)
        after = answered(args.target)
        with open(report) as f:
            rows = list(csv.DictReader(f))
    if len(rows) != 1:
        print(f"perf_analyzer_load: expected one row in its report, got {rows}\n{out}",
              file=sys.stderr)
        return 1
    row = rows[0]
    rps = float(row["Inferences/Second"])
    point = {"payload_bytes": nbytes, "concurrency": args.concurrency,
             "requests_ok": after - before, "errors": 0, "throughput_rps": rps,
             "seconds": (after - before) / rps if rps > 0 else 0.0,
             "latency_us": {"p50": float(row["p50 latency"]), "p99": float(row["p99 latency"])}}
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"client": "perf_analyzer 2.51.0", "points": [point]}, f)
    if not args.quiet:
        print(f"{args.sizes} x{args.concurrency}: {rps:.1f} req/s, "
              f"p50 {point['latency_us']['p50']:.1f} us, p99 {point['latency_us']['p99']:.1f} us")
    return 0


def run(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    """Runs perf_analyzer with its libraries (bench/peers/perf_analyzer.sh)."""
    lib = pathlib.Path(cmd[0]).resolve().parents[1] / "lib"
    env = dict(os.environ, LD_LIBRARY_PATH=f"{lib}:{os.environ.get('LD_LIBRARY_PATH', '')}")
    return subprocess.run(cmd, env=env, capture_output=True, text=True)


if __name__ == "__main__":
    sys.exit(main())
