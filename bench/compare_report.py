"""Ratio table (and JSON + PNG) from bench/compare.sh's myops-loadtest reports.

    python bench/compare_report.py bench/results/compare

Reads round*/{echo,myops,python}-*.json. Each ratio is computed within a round (the three
servers measured back to back at that payload), then the median over rounds is reported
with its range. Ratios: latency p50 of myops over echo (lower is better; targets 1.25x at
1 KiB and 1.2x at 16/64 MiB), throughput of myops over echo (target >= 0.8x at 1 KiB,
concurrency 16) and throughput of myops over the Python peer (target >= 5x; for one
payload, the request rate ratio is also the GB/s ratio). Writes compare.json and
compare.png (the PNG needs matplotlib).
"""

import json
import pathlib
import statistics
import sys

NAMES = ("echo", "myops", "python")


def size(n):
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB" if n >= 1 << 10 else f"{n} B"


def load_round(directory):
    """{name: {(payload_bytes, concurrency): point}} for one round."""
    data = {name: {} for name in NAMES}
    for name in NAMES:
        for path in directory.glob(f"{name}-*.json"):
            for p in json.loads(path.read_text())["points"]:
                data[name][(p["payload_bytes"], p["concurrency"])] = p
    return data


def ratio(a, b):
    return a / b if b else None


def summary(values):
    values = [v for v in values if v is not None]
    if not values:
        return None
    return {"median": statistics.median(values), "min": min(values), "max": max(values),
            "rounds": len(values)}


def main():
    out = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "bench/results/compare")
    rounds = [load_round(d) for d in sorted(out.glob("round*")) if d.is_dir()]
    if not rounds:
        sys.exit(f"no round*/ directories in {out}")
    keys = sorted({k for r in rounds for k in r["myops"]})
    rows = []
    for key in keys:
        per_round = [r for r in rounds if all(key in r[n] for n in NAMES)]
        if not per_round:
            continue
        pts = [{n: r[n][key] for n in NAMES} for r in per_round]
        rows.append({
            "payload_bytes": key[0], "concurrency": key[1],
            "p50_us": {n: statistics.median(p[n]["latency_us"]["p50"] for p in pts) for n in NAMES},
            "throughput_rps": {n: statistics.median(p[n]["throughput_rps"] for p in pts) for n in NAMES},
            "myops_p50_vs_echo": summary(
                [ratio(p["myops"]["latency_us"]["p50"], p["echo"]["latency_us"]["p50"]) for p in pts]),
            "myops_rps_vs_echo": summary(
                [ratio(p["myops"]["throughput_rps"], p["echo"]["throughput_rps"]) for p in pts]),
            "myops_rps_vs_python": summary(
                [ratio(p["myops"]["throughput_rps"], p["python"]["throughput_rps"]) for p in pts]),
            "errors": {n: sum(p[n]["errors"] for p in pts) for n in NAMES},
        })

    def fmt(s):
        if s is None:
            return "n/a"
        return f"{s['median']:.2f}x ({s['min']:.2f}-{s['max']:.2f})"

    print(f"median over {len(rounds)} round(s); (min-max) of the per-round ratios")
    print(f"{'payload':>8} {'conc':>4} {'echo p50':>10} {'myops p50':>10} {'python p50':>11} "
          f"{'p50 myops/echo':>20} {'rps myops/echo':>20} {'rps myops/python':>20} {'errors':>6}")
    for r in rows:
        print(f"{size(r['payload_bytes']):>8} {r['concurrency']:>4} {r['p50_us']['echo']:>10.1f} "
              f"{r['p50_us']['myops']:>10.1f} {r['p50_us']['python']:>11.1f} "
              f"{fmt(r['myops_p50_vs_echo']):>20} {fmt(r['myops_rps_vs_echo']):>20} "
              f"{fmt(r['myops_rps_vs_python']):>20} {sum(r['errors'].values()):>6}")
    (out / "compare.json").write_text(
        json.dumps({"benchmark": "compare", "rounds": len(rounds), "rows": rows}, indent=2))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no PNG")
        return
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, conc in zip(axes, (1, 16)):
        pts = [r for r in rows if r["concurrency"] == conc]
        for name in NAMES:
            ax.loglog([r["payload_bytes"] for r in pts], [r["p50_us"][name] for r in pts],
                      marker="o", label=name)
        ax.set_title(f"p50 latency (median of rounds), concurrency {conc}")
        ax.set_xlabel("payload bytes")
        ax.set_ylabel("us")
        ax.legend()
    fig.tight_layout()
    fig.savefig(out / "compare.png", dpi=100)
    print(f"wrote {out / 'compare.json'} and {out / 'compare.png'}")


if __name__ == "__main__":
    main()
