"""What the Python clients of bench/vs_triton.sh (tritonclient_load.py, perf_analyzer_load.py)
share: the model they call, and the subset of myops-loadtest's flags the script passes them
(--target, --protocol kserve, --sizes, --concurrency, --duration or --requests, --warmup,
--json, --quiet), parsed and checked alike."""

from __future__ import annotations

import argparse
import re

MODEL = "myops::scale_shift"
UNITS = {"": 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


def payload_bytes(text: str) -> int:
    """--sizes TEXT (one size, such as 1KiB or 16MiB) in bytes, a whole number of FP32s."""
    found = re.fullmatch(r"(\d+)(B|KiB|MiB|GiB)?", text)
    if not found:
        raise SystemExit(f"--sizes {text}: expected a size such as 1KiB or 16MiB")
    n = int(found.group(1)) * UNITS[found.group(2) or ""]
    if n < 4 or n % 4:
        raise SystemExit(f"--sizes {text}: expected a whole number of FP32 elements")
    return n


def parse(description: str, requests: bool) -> argparse.Namespace:
    """The flags; `requests`: whether --requests N may stand for --duration (one of the two
    is required), else --duration is."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--target", required=True)
    p.add_argument("--protocol", default="kserve", choices=["kserve"])
    p.add_argument("--sizes", required=True)
    p.add_argument("--concurrency", type=int, default=1)
    p.add_argument("--duration", type=float, required=not requests)
    if requests:
        p.add_argument("--requests", type=int)
    p.add_argument("--warmup", type=float, default=0.0)
    p.add_argument("--json")
    p.add_argument("--quiet", action="store_true")
    args = p.parse_args()
    if requests and (args.duration is None) == (args.requests is None):
        raise SystemExit("give one of --duration and --requests")
    if args.concurrency < 1:
        raise SystemExit("--concurrency: at least 1")
    args.payload_bytes = payload_bytes(args.sizes)
    return args
