"""The soak run behind bench/soak.sh: myops-server under mixed traffic from several
processes for --duration seconds, sampled from /proc; then a verdict.

The server runs with a 256 MiB memory budget (--budget), less than the traffic asks
for at its peaks, so RESOURCE_EXHAUSTED is expected and the budget is exercised.
Traffic: three myops-loadtest loops (unary 64 MiB..1 KiB, streams 4 MiB..1 KiB, largest
first so that the first third sees the peaks; an open loop of 1 KiB requests) and two
driver.py processes (malformed requests, expired and tight deadlines, cancelled unary
calls and streams, checked well-formed calls). Samples each second: the server's RSS,
open fds and threads (/proc/PID), and the in-flight, memory-held and open-streams
gauges from /metrics (where the server has them).

A warm-up runs the same traffic for 15 s (a quarter of shorter runs) plus the largest
requests from 8 clients at once, so that the budget fills: RSS is the allocator's high-water
mark, and the peak it keeps must be reached before the baseline, not by a rare coincidence
of large requests late in the run (such a late step, +96 MiB, once failed the rule below
with nothing leaking).

Passes when (1) memory plateaus: max RSS over the last third of the traffic <= 1.1x max
RSS over the first third, and once the traffic has stopped the heap in use (the
myops_heap_in_use_bytes gauge: what allocations hold, not the allocator's cache, which
RSS includes) is back within HEAP_SLACK_MIB of its idle baseline after the warm-up (a
leak of a few hundred bytes a request hides in RSS under the first rule, not here);
(2) nothing unexpected failed: loadtest requests succeed or
get RESOURCE_EXHAUSTED, every driver call ends with a status its kind allows; (3) once
the traffic stops, fds return to their idle baseline (after a warm-up), threads to
at most the warm-up's, give or take GRPC_POOL_SLACK threads of gRPC's own elastic pools
(GRPC_POOLS: they grow by a thread under load and do not always shrink back; a leak
grows past that, or in threads of other names), and the gauges to 0; (4) the server
then exits 0 on SIGTERM.
Writes soak.json and soak.png (RSS, fds and threads over time) to --out.
"""

import argparse
import json
import os
import pathlib
import re
import subprocess
import sys
import threading
import time
import urllib.request

HERE = pathlib.Path(__file__).resolve().parent


# gRPC's self-managed thread pools (names as /proc shows them, cut to 15 characters)
# and how many threads more than the baseline they may keep after the traffic.
GRPC_POOLS = ("grpc_global_tim", "default-executo", "event_engine", "resolver-execut",
              "timer_manager")
GRPC_POOL_SLACK = 2
# How far above its idle baseline after the warm-up the server's heap in use may stay once
# the traffic has stopped. RSS cannot tell a leak here: a clean 60 s run's grew 22 MiB
# (tcmalloc's cache after a late peak) while a leak of 256 bytes a request (~110k requests)
# would add 27. The heap in use returns to its baseline when nothing leaks.
HEAP_SLACK_MIB = 8
HEAP = "myops_heap_in_use_bytes"


def memory_back(after: dict, baseline: dict) -> bool:
    """Whether the heap in use `after` the traffic is back within HEAP_SLACK_MIB of the
    `baseline`'s (true where the server has no such gauge: a sanitizer build)."""
    if HEAP not in after or HEAP not in baseline:
        return True
    return after[HEAP] <= baseline[HEAP] + HEAP_SLACK_MIB * (1 << 20)


def threads_back(now: dict, baseline: dict) -> bool:
    """Whether the threads `now` (count, names) are back at `baseline`'s: no more,
    but for at most GRPC_POOL_SLACK more in gRPC's pools."""
    if now["threads"] <= baseline["threads"]:
        return True
    grown = {name: n - baseline["thread_names"].get(name, 0)
             for name, n in now["thread_names"].items()
             if n > baseline["thread_names"].get(name, 0)}
    return (all(name in GRPC_POOLS for name in grown)
            and now["threads"] - baseline["threads"] <= GRPC_POOL_SLACK)


def thread_names(pid: int) -> dict:
    """How many of the process's threads carry each name (/proc/PID/task/*/comm)."""
    names: dict = {}
    for task in pathlib.Path(f"/proc/{pid}/task").iterdir():
        try:
            name = (task / "comm").read_text().strip()
        except OSError:
            continue
        names[name] = names.get(name, 0) + 1
    return dict(sorted(names.items()))


def proc_counts(pid: int) -> dict:
    status = pathlib.Path(f"/proc/{pid}/status").read_text()
    rss = int(re.search(r"VmRSS:\s+(\d+) kB", status).group(1))
    threads = int(re.search(r"Threads:\s+(\d+)", status).group(1))
    return {"rss_mib": rss / 1024, "threads": threads, "fds": len(os.listdir(f"/proc/{pid}/fd"))}


class Soak:
    def __init__(self, args) -> None:
        self.args = args
        self.out = pathlib.Path(args.out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.log = open(self.out / "server.log", "w")
        flags = list(args.server_flag)
        if not any(f.startswith("--max-inflight-bytes") for f in flags):
            flags.append(f"--max-inflight-bytes={args.budget}")
        self.flags = flags
        self.server = subprocess.Popen(
            [args.server, "--address", "127.0.0.1:0", "--devices", "cpu", "--cpu-workers", "2",
             "--metrics-address", "127.0.0.1:0", "--max-message-bytes", str(128 << 20),
             "--drain-delay", "0", "--grace-period", "30", *flags],
            stdout=self.log, stderr=subprocess.STDOUT)
        text = ""
        for _ in range(1200):
            text = (self.out / "server.log").read_text()
            if "listening on" in text or self.server.poll() is not None:
                break
            time.sleep(0.1)
        found = re.search(r"listening on (127\.0\.0\.1:\d+)", text)
        metrics = re.search(r"metrics on (127\.0\.0\.1:\d+)", text)
        if not found or not metrics:
            sys.exit("myops-server did not start:\n" + text)
        self.target, self.metrics_address = found.group(1), metrics.group(1)
        self.loadtest_reports: list[dict] = []
        self.lock = threading.Lock()

    def gauges(self) -> dict:
        with urllib.request.urlopen(f"http://{self.metrics_address}/metrics", timeout=30) as r:
            text = r.read().decode()
        values = {}
        for name in ("myops_inflight_requests", "myops_memory_held_bytes", "myops_open_streams",
                     HEAP):
            m = re.search(rf"^{name} (\S+)$", text, re.M)
            if m:
                values[name] = float(m.group(1))
        return values

    def sample(self, t0: float) -> dict:
        return {"t": round(time.monotonic() - t0, 2), **proc_counts(self.server.pid),
                **self.gauges()}

    def loadtest_loop(self, name: str, flags: list[list[str]], until: float, window: float):
        """Runs myops-loadtest with each flag set in turn until `until`."""
        i = 0
        while time.time() + window < until:
            json_path = self.out / f"loadtest-{name}-{i}.json"
            cmd = [self.args.loadtest, "--target", self.target, "--duration", str(window),
                   "--warmup", "0", "--max-windows", "1", "--min-requests", "1",
                   "--deadline-ms", "300000", "--quiet", "--json", str(json_path),
                   *flags[i % len(flags)]]
            run = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                 text=True)
            rc, stderr = run.returncode, run.stderr
            report = {"name": name, "flags": flags[i % len(flags)], "rc": rc, "errors": {}}
            if rc not in (0, 3):  # 3: finished, with errors (judged from the JSON below)
                report["stderr"] = stderr[-2000:]
            if json_path.exists():
                for p in json.loads(json_path.read_text())["points"]:
                    report.setdefault("ok", 0)
                    report["ok"] += p["requests_ok"]
                    for code, n in p["errors_by_code"].items():
                        report["errors"][code] = report["errors"].get(code, 0) + n
                json_path.unlink()
            with self.lock:
                self.loadtest_reports.append(report)
            i += 1

    def traffic(self, seconds: float, window: float, peak: bool = False) -> list[subprocess.Popen]:
        until = time.time() + seconds
        loops = {
            "unary": [["--concurrency", "2", "--sizes", s]
                      for s in ("64MiB", "16MiB", "1MiB", "64KiB", "1KiB")],
            "stream": [["--stream", "--concurrency", "2", "--sizes", s]
                       for s in ("4MiB", "256KiB", "1KiB")],
            "open": [["--rate", "100", "--poisson", "--shape", "256"]],
        }
        if peak:  # the largest requests from many clients at once: the budget full
            loops["peak"] = [["--concurrency", "8", "--sizes", "64MiB"],
                             ["--stream", "--concurrency", "8", "--sizes", "4MiB"]]
        threads = [threading.Thread(target=self.loadtest_loop, args=(n, f, until, window))
                   for n, f in loops.items()]
        drivers = [subprocess.Popen(
            [sys.executable, str(HERE / "driver.py"), "--target", self.target, "--until",
             str(until), "--seed", str(seed), "--json", str(self.out / f"driver-{seed}.json")],
            stdout=subprocess.PIPE, text=True) for seed in (1, 2)]
        for t in threads:
            t.start()
        return threads, drivers

    def settle(self, baseline: dict, limit: float = 180) -> dict:
        """Samples until fds, threads and gauges are back at the baseline (or `limit` s)."""
        deadline = time.monotonic() + limit
        while True:
            now = {**proc_counts(self.server.pid), **self.gauges(),
                   "thread_names": thread_names(self.server.pid)}
            back = (now["fds"] <= baseline["fds"] and threads_back(now, baseline)
                    and now.get("myops_inflight_requests", 0) == 0
                    and now.get("myops_memory_held_bytes", 0) == 0
                    and now.get("myops_open_streams", 0) == 0)
            if back or time.monotonic() > deadline:
                return {**now, "back_to_baseline": back}
            time.sleep(1)

    def run(self) -> int:
        args = self.args
        # Warm-up: every kind of traffic briefly, so that lazily created threads and fds
        # exist before the baseline is taken.
        threads, drivers = self.traffic(min(15.0, args.duration / 4), window=2, peak=True)
        warm = []
        while any(t.is_alive() for t in threads) or any(d.poll() is None for d in drivers):
            warm.append(proc_counts(self.server.pid))
            time.sleep(1)
        for d in drivers:
            d.communicate()
        self.loadtest_reports.clear()
        # The baseline. fds: the most seen over 5 idle seconds after the warm-up (no
        # connection is open then). threads: the most seen during the warm-up and those
        # idle seconds: gRPC's timer and executor pools grow by a thread or two under
        # load and do not always shrink back; a leak keeps growing past that.
        idle = []
        for _ in range(5):
            time.sleep(1)
            idle.append(proc_counts(self.server.pid))
        baseline = {**idle[-1], "fds": max(c["fds"] for c in idle),
                    "threads": max(c["threads"] for c in idle + warm), **self.gauges(),
                    "thread_names": thread_names(self.server.pid)}
        t0 = time.monotonic()
        samples = []
        window = max(2.0, min(10.0, args.duration / 30))
        threads, drivers = self.traffic(args.duration, window)
        while any(t.is_alive() for t in threads) or any(d.poll() is None for d in drivers):
            samples.append(self.sample(t0))
            time.sleep(1)
        traffic_end = time.monotonic() - t0
        for d in drivers:
            d.communicate()
        after = self.settle(baseline)
        after["t"] = round(time.monotonic() - t0, 2)
        self.server.send_signal(15)
        exit_code = self.server.wait(timeout=120)
        return self.verdict(baseline, samples, traffic_end, after, exit_code)

    def verdict(self, baseline, samples, traffic_end, after, exit_code) -> int:
        third = traffic_end / 3
        first = [s["rss_mib"] for s in samples if s["t"] <= third]
        last = [s["rss_mib"] for s in samples if s["t"] >= 2 * third]
        loadtest_errors, loadtest_ok, loadtest_bad_rc = {}, 0, 0
        for r in self.loadtest_reports:
            loadtest_ok += r.get("ok", 0)
            loadtest_bad_rc += r["rc"] not in (0, 3) or (r["rc"] == 3) != bool(r["errors"])
            for code, n in r["errors"].items():
                loadtest_errors[code] = loadtest_errors.get(code, 0) + n
        drivers = [json.loads((self.out / f"driver-{s}.json").read_text()) for s in (1, 2)]
        driver_counts: dict = {}
        for d in drivers:
            for kind, codes in d["counts"].items():
                for code, n in codes.items():
                    driver_counts.setdefault(kind, {}).setdefault(code, 0)
                    driver_counts[kind][code] += n
        unexpected_loadtest = {c: n for c, n in loadtest_errors.items() if c != "RESOURCE_EXHAUSTED"}
        checks = {
            "memory_plateaus": bool(first and last and max(last) <= 1.1 * max(first)),
            "memory_back_to_baseline": memory_back(after, baseline),
            "nothing_unexpected_failed": not unexpected_loadtest and loadtest_bad_rc == 0
            and all(d["unexpected_total"] == 0 for d in drivers) and loadtest_ok > 0,
            "back_to_baseline": after["back_to_baseline"],
            "exit_0_on_sigterm": exit_code == 0,
        }
        report = {
            "duration_s": self.args.duration, "traffic_s": round(traffic_end, 1),
            "server_flags": self.flags, "checks": checks,
            "passed": all(checks.values()),
            "rss_mib": {"max_first_third": max(first, default=None),
                        "max_last_third": max(last, default=None),
                        "max": max((s["rss_mib"] for s in samples), default=None)},
            "baseline": baseline, "after": after,
            "loadtest": {"runs": len(self.loadtest_reports), "requests_ok": loadtest_ok,
                         "errors_by_code": loadtest_errors, "bad_exits": loadtest_bad_rc,
                         "failed_runs": [r for r in self.loadtest_reports if "stderr" in r]},
            "driver": {"counts": driver_counts,
                       "unexpected": [u for d in drivers for u in d["unexpected"]]},
            "samples": samples,
        }
        (self.out / "soak.json").write_text(json.dumps(report, indent=1))
        self.plot(samples, baseline, traffic_end, after)
        summary = {k: v for k, v in report.items() if k not in ("samples", "driver")}
        summary["driver_calls"] = sum(sum(c.values()) for c in driver_counts.values())
        print(json.dumps(summary, indent=1))
        print("soak:", "PASSED" if report["passed"] else "FAILED", self.out / "soak.json")
        return 0 if report["passed"] else 1

    def plot(self, samples, baseline, traffic_end, after) -> None:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        t = [s["t"] for s in samples] + [after["t"]]
        fig, (ax, bx) = plt.subplots(2, 1, figsize=(7, 4.5), sharex=True,
                                     gridspec_kw={"height_ratios": [2, 1]})
        ax.plot(t, [s["rss_mib"] for s in samples] + [after["rss_mib"]], lw=1)
        ax.set_ylabel("RSS (MiB)")
        ax.set_ylim(bottom=0)
        ax.set_title(f"myops-server soak: {self.args.duration:.0f} s mixed traffic")
        for x in (traffic_end / 3, 2 * traffic_end / 3):
            ax.axvline(x, color="gray", ls=":", lw=0.8)
        ax.axvline(traffic_end, color="red", ls="--", lw=0.8, label="traffic stops")
        ax.legend(loc="lower right", fontsize=8)
        bx.plot(t, [s["fds"] for s in samples] + [after["fds"]], lw=1, label="fds")
        bx.plot(t, [s["threads"] for s in samples] + [after["threads"]], lw=1, label="threads")
        bx.axhline(baseline["fds"], color="C0", ls=":", lw=0.8)
        bx.axhline(baseline["threads"], color="C1", ls=":", lw=0.8)
        bx.set_xlabel("seconds")
        bx.legend(loc="upper right", fontsize=8)
        fig.tight_layout()
        fig.savefig(self.out / "soak.png", dpi=72)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--server", required=True)
    p.add_argument("--loadtest", required=True)
    p.add_argument("--duration", type=float, default=600)
    p.add_argument("--out", required=True)
    p.add_argument("--budget", type=int, default=256 << 20,
                   help="--max-inflight-bytes of the server (unless given by --server-flag): "
                   "the traffic asks for more, so the memory budget is exercised")
    p.add_argument("--server-flag", action="append", default=[],
                   help="extra myops-server flag (repeatable), e.g. --server-flag=--max-inflight=8")
    soak = Soak(p.parse_args())
    try:
        return soak.run()
    finally:
        if soak.server.poll() is None:
            soak.server.kill()


if __name__ == "__main__":
    sys.exit(main())
