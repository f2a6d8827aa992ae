"""Ratio table (and JSON + PNG) from bench/compare.sh's per-target myops-loadtest reports.

    python bench/compare_report.py bench/results/compare

Reads echo.json, myops.json and python.json; writes compare.json and compare.png (the
PNG needs matplotlib). Ratios: latency p50 of myops over echo (lower is better; targets
1.25x at 1 KiB and 1.2x at 16/64 MiB), throughput of myops over echo (target >= 0.8x at
1 KiB, concurrency 16) and throughput of myops over the Python peer (target >= 5x).
"""

import json
import pathlib
import sys


def load(path):
    points = json.loads(path.read_text())["points"]
    return {(p["payload_bytes"], p["concurrency"]): p for p in points}


def size(n):
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB" if n >= 1 << 10 else f"{n} B"


def main():
    out = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "bench/results/compare")
    data = {name: load(out / f"{name}.json") for name in ("echo", "myops", "python")}
    rows = []
    for key in sorted(data["myops"]):
        e, m, p = (data[n].get(key) for n in ("echo", "myops", "python"))
        if not (e and m and p):
            continue
        rows.append({
            "payload_bytes": key[0], "concurrency": key[1],
            "p50_us": {n: d["latency_us"]["p50"] for n, d in (("echo", e), ("myops", m), ("python", p))},
            "throughput_rps": {n: d["throughput_rps"] for n, d in (("echo", e), ("myops", m), ("python", p))},
            "myops_p50_vs_echo": m["latency_us"]["p50"] / e["latency_us"]["p50"],
            "myops_rps_vs_echo": m["throughput_rps"] / e["throughput_rps"] if e["throughput_rps"] else None,
            "myops_rps_vs_python": m["throughput_rps"] / p["throughput_rps"] if p["throughput_rps"] else None,
            "errors": {n: d["errors"] for n, d in (("echo", e), ("myops", m), ("python", p))},
        })
    print(f"{'payload':>8} {'conc':>4} {'echo p50':>10} {'myops p50':>10} {'python p50':>11} "
          f"{'p50 m/e':>8} {'rps m/e':>8} {'rps m/py':>9}")
    for r in rows:
        fmt = lambda v: f"{v:.2f}x" if v is not None else "n/a"  # noqa: E731
        print(f"{size(r['payload_bytes']):>8} {r['concurrency']:>4} {r['p50_us']['echo']:>10.1f} "
              f"{r['p50_us']['myops']:>10.1f} {r['p50_us']['python']:>11.1f} {fmt(r['myops_p50_vs_echo']):>8} "
              f"{fmt(r['myops_rps_vs_echo']):>8} {fmt(r['myops_rps_vs_python']):>9}")
    (out / "compare.json").write_text(json.dumps({"benchmark": "compare", "rows": rows}, indent=2))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no PNG")
        return
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, conc in zip(axes, (1, 16)):
        for name in ("echo", "myops", "python"):
            pts = [r for r in rows if r["concurrency"] == conc]
            ax.loglog([r["payload_bytes"] for r in pts], [r["p50_us"][name] for r in pts], marker="o", label=name)
        ax.set_title(f"p50 latency, concurrency {conc}")
        ax.set_xlabel("payload bytes")
        ax.set_ylabel("us")
        ax.legend()
    fig.tight_layout()
    fig.savefig(out / "compare.png", dpi=100)
    print(f"wrote {out / 'compare.json'} and {out / 'compare.png'}")


if __name__ == "__main__":
    main()
