"""Latency percentiles against throughput across a myops-loadtest concurrency sweep.

    myops-loadtest --concurrency 1,2,4,8,16,32 --json sweep.json ...
    python bench/plot_sweep.py sweep.json [sweep.png]

One line per percentile (p50, p90, p99, p99.9), one point per concurrency level (and per
payload size when the sweep has several: one panel each). Needs matplotlib.
"""

import json
import pathlib
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    src = pathlib.Path(sys.argv[1])
    dst = pathlib.Path(sys.argv[2]) if len(sys.argv) > 2 else src.with_suffix(".png")
    points = json.loads(src.read_text())["points"]
    sizes = sorted({p["payload_bytes"] for p in points})
    fig, axes = plt.subplots(1, len(sizes), figsize=(5.5 * len(sizes), 4), squeeze=False)
    for ax, size in zip(axes[0], sizes):
        pts = sorted((p for p in points if p["payload_bytes"] == size), key=lambda p: p["throughput_rps"])
        x = [p["throughput_rps"] for p in pts]
        for q in ("p50", "p90", "p99", "p99_9"):
            ax.plot(x, [p["latency_us"][q] for p in pts], marker="o", label=q.replace("_", "."))
        for p in pts:
            ax.annotate(f"c{p['concurrency']}", (p["throughput_rps"], p["latency_us"]["p50"]), fontsize=7)
        ax.set_yscale("log")
        ax.set_xlabel("throughput (requests/s)")
        ax.set_ylabel("latency (us)")
        ax.set_title(f"{pts[0]['target']}: {size} B payload")
        ax.legend()
    fig.tight_layout()
    fig.savefig(dst, dpi=100)
    print(f"wrote {dst}")


if __name__ == "__main__":
    main()
