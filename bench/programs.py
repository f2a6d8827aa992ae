"""An exported program served by myops-server (--program) against its floor and against
calling its operators one by one: scripts/export_program.py's model (scale_shift, a
convolution, relu, torchvision's roi_align, a mean), packaged with AOTInductor for the
CPU, timed three ways with one caller, the kinds alternating over `--rounds` rounds of
`--seconds` each (machine noise then hits them alike):

  in-process  the same package run in this process (torch._inductor.aoti_load_package):
              the floor, no network
  served      myops_client.Client.call("detector", image, boxes): one round trip
  op-by-op    the model's five operators called one at a time on the same server
              (myops_client, the convolution's weights sent with each call), as a model
              that uses served operators without a program pays
  round-trip  a 1 KiB myops::scale_shift call with the same client: what one call costs
              apart from its work (served is about in-process + round-trip + the work's
              share of a core the client also uses)

Prints the median latency per call of each kind per batch size and the median ratios
served/in-process and op-by-op/served over rounds; writes JSON.

    source scripts/env.sh && myops_build
    python bench/programs.py [--batches 2,15] [--seconds 2] [--rounds 5] [--out FILE]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

REPO = pathlib.Path(__file__).resolve().parents[1]
BUILD = pathlib.Path(os.environ.get("MYOPS_BUILD_DIR", REPO / "build"))
sys.path.insert(0, str(BUILD / "python"))
KINDS = ("in-process", "served", "op-by-op", "round-trip")
OPS = "myops::*,aten::conv2d,aten::relu,aten::mean.dim,torchvision::roi_align"


def example_module():
    spec = importlib.util.spec_from_file_location("export_program",
                                                  REPO / "scripts" / "export_program.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def start_server(package: str):
    import torchvision
    library = pathlib.Path(torchvision.__file__).parent / "_C.so"
    log = tempfile.NamedTemporaryFile(mode="w+", prefix="myops-server-")
    proc = subprocess.Popen([str(BUILD / "server" / "myops-server"), "--address", "127.0.0.1:0",
                             "--devices", "cpu", "--drain-delay", "0", "--load-library",
                             str(library), "--ops", OPS, "--program", f"detector={package}"],
                            stdout=log, stderr=subprocess.STDOUT)
    for _ in range(1200):
        found = re.search(r"listening on (127\.0\.0\.1:\d+)", pathlib.Path(log.name).read_text())
        if found:
            return proc, found.group(1), log
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.kill()
    raise SystemExit("myops-server did not start:\n" + pathlib.Path(log.name).read_text())


def op_by_op(client, weights, image, boxes):
    """The model's forward pass, each operator a remote call."""
    x = client.call("myops::scale_shift", image, 0.5, -0.25)
    x = client.call("aten::conv2d", x, weights["conv.weight"], weights["conv.bias"], [1, 1], [1, 1])
    x = client.call("aten::relu", x)
    pooled = client.call("torchvision::roi_align", x, boxes, 1.0, 2, 2, -1, False)
    return pooled, client.call("aten::mean.dim", x, [2, 3])


def timed(fn, seconds: float) -> float:
    """Median seconds per call of `fn` over `seconds` (after one warm-up call)."""
    fn()
    samples = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batches", default="2,15")
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    batches = [int(b) for b in args.batches.split(",")]

    import myops_client
    example = example_module()
    work = tempfile.mkdtemp(prefix="myops-programs-")
    package = example.export(os.path.join(work, "detector.pt2"))
    local = torch._inductor.aoti_load_package(package)
    weights = {k: v.numpy() for k, v in example.build_model().state_dict().items()}
    proc, address, log = start_server(package)
    try:
        client = myops_client.Client(address)
        results = {}
        for batch in batches:
            image_t, boxes_t = example.example_inputs(batch)
            image, boxes = image_t.numpy(), boxes_t.numpy()
            small = np.ones(256, dtype=np.float32)
            calls = {
                "in-process": lambda: local(image_t, boxes_t),
                "served": lambda: client.call("detector", image, boxes),
                "op-by-op": lambda: op_by_op(client, weights, image, boxes),
                "round-trip": lambda: client.call("myops::scale_shift", small, 2.0, 1.0),
            }
            # The three compute the same thing.
            want = [t.numpy() for t in local(image_t, boxes_t)]
            for kind in ("served", "op-by-op"):  # not round-trip
                for got, expected in zip(calls[kind](), want):
                    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
            rounds = []
            for r in range(args.rounds):
                row = {kind: timed(calls[kind], args.seconds) for kind in KINDS}
                rounds.append(row)
                print(f"batch {batch} round {r + 1}: " + "  ".join(
                    f"{k} {row[k] * 1e6:.0f} us" for k in KINDS), flush=True)
            ratios = {
                "served/in-process": statistics.median(r["served"] / r["in-process"] for r in rounds),
                "op-by-op/served": statistics.median(r["op-by-op"] / r["served"] for r in rounds),
            }
            results[batch] = {"rounds": rounds, "ratios": ratios}
            print(f"batch {batch}: median us " + "  ".join(
                f"{k} {statistics.median(r[k] for r in rounds) * 1e6:.0f}" for k in KINDS)
                + "  |  " + "  ".join(f"{k} {v:.2f}x" for k, v in ratios.items()), flush=True)
        client.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    if args.out:
        pathlib.Path(args.out).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
