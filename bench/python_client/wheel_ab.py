"""Two builds of the Python client side by side: the 1 KiB scale_shift round trip (p50)
and 16 MiB throughput (GB/s of payload each way, from the p50) of wheel A against wheel B
on one myops-server (CPU), e.g. the abi3 wheel (CPython's limited API) against a
version-specific cp311 one built from an earlier commit.

Each wheel is unpacked into a temporary directory (its auditwheel-bundled libraries
come along); each measurement is bench.py's python worker in its own process importing
myops_client from there, A and B one after the other in every round (order alternating),
so the ratio A/B is taken within a round and its median over --rounds printed.

    source scripts/env.sh && myops_build --target myops-server && scripts/build_wheel.sh
    git worktree add /tmp/base <commit> && (cd /tmp/base && scripts/build_wheel.sh)
    python bench/python_client/wheel_ab.py --a dist/myops_client-*-abi3-*.whl \\
        --b /tmp/base/dist/myops_client-*-cp311-cp311-*.whl [--rounds 7]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import zipfile

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench import parse_size, start_server  # noqa: E402

SIZES = ("1KiB", "16MiB")


def measure(package_dir: pathlib.Path, address: str, out: pathlib.Path,
            args: argparse.Namespace) -> dict[str, float]:
    """{size: p50_us} of one worker process importing myops_client from package_dir."""
    subprocess.run(
        [sys.executable, str(HERE / "bench.py"), "--worker", "python", "--address",
         address, "--package-dir", str(package_dir), "--out", str(out), "--sizes",
         ",".join(SIZES), "--max-requests", str(args.max_requests), "--warmup", "20"],
        check=True)
    return json.loads(out.read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--a", required=True, help="wheel A (e.g. the abi3 one)")
    parser.add_argument("--b", required=True, help="wheel B (the baseline)")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--max-requests", type=int, default=3000)
    args = parser.parse_args()
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="myops-wheel-ab-"))
    proc, address, log = start_server()
    try:
        dirs = {}
        for name, wheel in (("A", args.a), ("B", args.b)):
            dirs[name] = tmp / name
            zipfile.ZipFile(wheel).extractall(dirs[name])
            print(f"{name}: {pathlib.Path(wheel).name}: "
                  f"{[p.name for p in (dirs[name] / 'myops_client').glob('_core*.so')]}")
        rounds = []
        for r in range(args.rounds):
            order = ("A", "B") if r % 2 == 0 else ("B", "A")
            p50 = {name: measure(dirs[name], address, tmp / f"{name}{r}.json", args)
                   for name in order}
            rounds.append(p50)
            print(f"round {r + 1}: " + "  ".join(
                f"{n} 1KiB {p50[n]['1KiB']:.1f} us 16MiB {p50[n]['16MiB'] / 1e3:.2f} ms"
                for n in ("A", "B")), flush=True)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)

    def gbps(p50_us: float) -> float:
        return parse_size("16MiB") / (p50_us * 1e3)

    latency = [r["A"]["1KiB"] / r["B"]["1KiB"] for r in rounds]
    throughput = [gbps(r["A"]["16MiB"]) / gbps(r["B"]["16MiB"]) for r in rounds]
    med = {n: {s: statistics.median(r[n][s] for r in rounds) for s in SIZES} for n in "AB"}
    print(f"\n1 KiB p50: A {med['A']['1KiB']:.1f} us, B {med['B']['1KiB']:.1f} us; "
          f"A/B median {statistics.median(latency):.3f} "
          f"(range {min(latency):.3f}..{max(latency):.3f})")
    print(f"16 MiB GB/s: A {gbps(med['A']['16MiB']):.2f}, B {gbps(med['B']['16MiB']):.2f}; "
          f"A/B median {statistics.median(throughput):.3f} "
          f"(range {min(throughput):.3f}..{max(throughput):.3f})")


if __name__ == "__main__":
    main()
