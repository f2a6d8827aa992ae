"""Two builds of myops-server side by side on the Open Inference Protocol's REST port
(--http-address), for a change's before/after of the HTTP server: both servers up at once,
closed loop, `myops::scale_shift` infer requests with the binary tensor data extension
(float32 input and output as raw bytes after the JSON header).

The client is kept cheap so the servers dominate: N worker processes (one per unit of
concurrency), each with one keep-alive socket, sending one pre-built request bytes object
back to back and reading each response by its Content-Length (status 200 and the
expected length checked on every response; the output values checked once per server
and size before measuring). For every (size, concurrency) point and round, old (A) and
new (B) each get --seconds of load, one after the other, the order alternating by round
so machine noise hits both alike. Per phase: requests completed, req/s, latency p50 (per
request, perf_counter_ns) and the server's own CPU time over the phase (utime + stime
from /proc/<pid>/stat; 10 ms ticks, so use --seconds of at least 2) per request. Prints
every round and the median over rounds of the per-round ratios new/old (B/A) with their
ranges; writes JSON with everything.

    python bench/rest_ab.py OLD_BUILD NEW_BUILD [--sizes 1KiB,1MiB] [--concurrency 1,8]
                            [--rounds 5] [--seconds 2] [--warmup 50] [--json out.json]

Each build directory must hold server/myops-server (as for bench/ab_servers.sh). Only
the standard library is needed. The new server accepts at most 64 REST connections from
one address (--http-max-connections-per-address), so keep --concurrency at most 64.
"""

from __future__ import annotations

import argparse
import array
import json
import multiprocessing
import os
import pathlib
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
MODEL = "myops::scale_shift"
ALPHA, BETA = 2.0, 1.0
SIDES = ("old", "new")  # A, B
TICKS = os.sysconf("SC_CLK_TCK")
UNITS = {"": 1, "b": 1, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30}


def parse_size(text: str) -> int:
    m = re.fullmatch(r"\s*(\d+)\s*([A-Za-z]*)\s*", text)
    if not m or m.group(2).lower() not in UNITS:
        raise argparse.ArgumentTypeError(f"size {text!r}: expected e.g. 1024, 1KiB, 1MiB")
    nbytes = int(m.group(1)) * UNITS[m.group(2).lower()]
    if nbytes <= 0 or nbytes % 4:
        raise argparse.ArgumentTypeError(f"size {text!r}: a positive multiple of 4 bytes")
    return nbytes


# --- servers ---------------------------------------------------------------------------

class Server:
    def __init__(self, side: str, build: pathlib.Path):
        self.side, self.binary = side, build / "server" / "myops-server"
        self.log = tempfile.NamedTemporaryFile(mode="w+", prefix=f"myops-server-{side}-")
        self.proc = subprocess.Popen(
            [str(self.binary), "--address", "127.0.0.1:0", "--http-address", "127.0.0.1:0",
             "--devices", "cpu", "--drain-delay", "0"],
            stdout=self.log, stderr=subprocess.STDOUT)
        self.http = None

    def wait_ready(self, timeout: float = 120.0) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            m = re.search(r"http on (127\.0\.0\.1):(\d+)", self.text())
            if m:
                self.http = (m.group(1), int(m.group(2)))
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        self.stop()
        raise SystemExit(f"{self.side} myops-server ({self.binary}) did not start:\n"
                         + self.text())

    def text(self) -> str:
        return pathlib.Path(self.log.name).read_text(errors="replace")

    def cpu_seconds(self) -> float:
        """utime + stime of the server process so far."""
        stat = pathlib.Path(f"/proc/{self.proc.pid}/stat").read_text()
        fields = stat[stat.rindex(")") + 2:].split()  # fields from 3 (state) on
        return (int(fields[11]) + int(fields[12])) / TICKS  # fields 14 and 15

    def check_alive(self) -> None:
        if self.proc.poll() is not None:
            raise SystemExit(f"{self.side} myops-server exited ({self.proc.returncode}):\n"
                             + self.text()[-4000:])

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


# --- the client ------------------------------------------------------------------------

class Conn:
    """One keep-alive HTTP/1.1 connection; responses read by Content-Length into a
    reused buffer."""

    def __init__(self, address, expect_bytes: int):
        self.sock = socket.create_connection(address, timeout=120)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray(expect_bytes + 65536)
        self.view = memoryview(self.buf)

    def _grow(self, size: int, keep: int) -> None:
        buf = bytearray(size)
        buf[:keep] = self.view[:keep]
        self.view.release()
        self.buf, self.view = buf, memoryview(buf)

    def roundtrip(self, request: bytes):
        """(status, lowercased header block, body start, body end) of one request."""
        sock = self.sock
        sock.sendall(request)
        got = 0
        while True:
            if got == len(self.buf):
                self._grow(2 * len(self.buf), got)
            n = sock.recv_into(self.view[got:])
            if not n:
                raise ConnectionError("the server closed the connection")
            got += n
            end = self.buf.find(b"\r\n\r\n", 0, got)
            if end >= 0:
                break
        head = bytes(self.view[:end]).lower()
        i = head.find(b"\r\ncontent-length:")
        if i < 0:
            raise ConnectionError(f"a response without Content-Length: {head[:500]!r}")
        j = head.find(b"\r\n", i + 2)
        total = end + 4 + int(head[i + 17:j if j >= 0 else len(head)])
        if total > len(self.buf):
            self._grow(total, got)
        while got < total:
            n = sock.recv_into(self.view[got:total])
            if not n:
                raise ConnectionError("the server closed the connection mid-response")
            got += n
        if got > total:
            raise ConnectionError(f"{got - total} bytes after a response (closed loop)")
        if b"\r\nconnection: close" in head:
            raise ConnectionError("the server answered 'Connection: close' (no keep-alive)")
        return int(head[9:12]), head, end + 4, total

    def close(self) -> None:
        self.view.release()
        self.sock.close()


def make_request(address, nbytes: int):
    """(request bytes, expected output bytes) for scale_shift of nbytes of float32."""
    n = nbytes // 4
    pattern = [float(i % 4096 - 2048) for i in range(4096)]  # exact in float32 after 2x+1
    x = array.array("f", pattern) * (n // 4096) + array.array("f", pattern[:n % 4096])
    y = array.array("f", [ALPHA * v + BETA for v in pattern])
    y = y * (n // 4096) + y[:n % 4096]
    if sys.byteorder != "little":
        x.byteswap()
        y.byteswap()
    head = json.dumps({
        "inputs": [{"name": "x", "shape": [n], "datatype": "FP32",
                    "parameters": {"binary_data_size": nbytes}}],
        "outputs": [{"name": "output__0", "parameters": {"binary_data": True}}],
        "parameters": {"alpha": ALPHA, "beta": BETA}}, separators=(",", ":")).encode()
    request = (f"POST /v2/models/{MODEL}/infer HTTP/1.1\r\n"
               f"Host: {address[0]}:{address[1]}\r\n"
               "Content-Type: application/octet-stream\r\n"
               f"Inference-Header-Content-Length: {len(head)}\r\n"
               f"Content-Length: {len(head) + nbytes}\r\n\r\n").encode() + head + x.tobytes()
    return request, y.tobytes()


def verify(address, nbytes: int) -> int:
    """Checks one response's header and values; returns its body length (Content-Length)."""
    request, expected = make_request(address, nbytes)
    conn = Conn(address, len(expected))
    try:
        status, head, start, end = conn.roundtrip(request)
        body = bytes(conn.view[start:end])
    finally:
        conn.close()
    if status != 200:
        raise SystemExit(f"{address}: status {status}: {body[:1000]!r}")
    m = re.search(rb"\r\ninference-header-content-length:\s*(\d+)", head)
    if not m:
        raise SystemExit(f"{address}: no Inference-Header-Content-Length: {head!r}")
    json_len = int(m.group(1))
    answer = json.loads(body[:json_len])
    out = answer["outputs"][0]
    want = {"name": "output__0", "datatype": "FP32", "shape": [nbytes // 4]}
    if ({k: out.get(k) for k in want} != want
            or out.get("parameters", {}).get("binary_data_size") != nbytes):
        raise SystemExit(f"{address}: unexpected output header {answer}")
    if body[json_len:] != expected:
        raise SystemExit(f"{address}: output values differ from {ALPHA}*x+{BETA}")
    return len(body)


def worker(address, request: bytes, body_bytes: int, warmup: int, seconds: float,
           ready, start, done, out) -> None:
    """One closed-loop client: warm up, report ready, run `seconds` from `start`, report
    (requests, elapsed ns, latencies ns, error), keep the connection until `done`."""
    conn = None
    try:
        conn = Conn(address, body_bytes)
        for _ in range(warmup):
            status, _, s, e = conn.roundtrip(request)
            if status != 200 or e - s != body_bytes:
                raise RuntimeError(f"warm-up: status {status}, {e - s} bytes: "
                                   f"{bytes(conn.view[s:min(e, s + 1000)])!r}")
    except Exception as exc:  # noqa: BLE001: reported to the parent
        ready.put(f"{type(exc).__name__}: {exc}")
        return
    ready.put(None)
    start.wait()
    lat = array.array("q")
    error = None
    clock = time.perf_counter_ns
    t0 = clock()
    end = t0 + int(seconds * 1e9)
    now = t0
    try:
        while now < end:
            t = clock()
            status, _, s, e = conn.roundtrip(request)
            now = clock()
            if status != 200 or e - s != body_bytes:
                error = (f"status {status}, {e - s} bytes: "
                         f"{bytes(conn.view[s:min(e, s + 1000)])!r}")
                break
            lat.append(now - t)
    except Exception as exc:  # noqa: BLE001
        error = f"{type(exc).__name__}: {exc}"
    out.put((len(lat), now - t0, lat.tobytes(), error))
    done.wait()
    conn.close()


def percentile(sorted_values, q: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def phase(server: Server, request: bytes, body_bytes: int, concurrency: int,
          seconds: float, warmup: int) -> dict:
    ctx = multiprocessing.get_context("fork")
    ready, out = ctx.Queue(), ctx.Queue()
    start, done = ctx.Event(), ctx.Event()
    procs = [ctx.Process(target=worker, daemon=True,
                         args=(server.http, request, body_bytes, warmup, seconds, ready,
                               start, done, out)) for _ in range(concurrency)]
    for p in procs:
        p.start()
    try:
        errors = [e for e in (ready.get(timeout=300) for _ in procs) if e]
        if errors:
            raise SystemExit(f"{server.side} server, warm-up: {errors[0]}")
        cpu0 = server.cpu_seconds()
        start.set()
        results = [out.get(timeout=seconds + 300) for _ in procs]
        cpu1 = server.cpu_seconds()
    finally:
        start.set()
        done.set()
        for p in procs:
            p.join(timeout=30)
    errors = [r[3] for r in results if r[3]]
    if errors:
        raise SystemExit(f"{server.side} server: {errors[0]} "
                         f"({len(errors)} of {concurrency} workers failed)")
    lat = array.array("q")
    for r in results:
        lat.frombytes(r[2])
    lat = sorted(lat)
    requests = sum(r[0] for r in results)
    cpu = cpu1 - cpu0
    return {"requests": requests,
            "req_per_s": sum(r[0] / (r[1] / 1e9) for r in results),
            "p50_us": percentile(lat, 0.5) / 1e3, "p90_us": percentile(lat, 0.9) / 1e3,
            "p99_us": percentile(lat, 0.99) / 1e3, "mean_us": sum(lat) / len(lat) / 1e3,
            "server_cpu_s": cpu, "cpu_us_per_request": 1e6 * cpu / requests}


# --- main ------------------------------------------------------------------------------

def summary(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("old", type=pathlib.Path, help="OLD_BUILD (A), holding server/myops-server")
    parser.add_argument("new", type=pathlib.Path, help="NEW_BUILD (B), holding server/myops-server")
    parser.add_argument("--sizes", default="1KiB,1MiB", help="payload bytes (default 1KiB,1MiB)")
    parser.add_argument("--concurrency", default="1,8",
                        help="worker processes, one connection each (default 1,8)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=2.0, help="per phase (default 2)")
    parser.add_argument("--warmup", type=int, default=50,
                        help="untimed requests per worker before each phase (default 50)")
    parser.add_argument("--json", default=str(REPO / "bench" / "results" / "rest_ab.json"))
    args = parser.parse_args()
    for build in (args.old, args.new):
        if not os.access(build / "server" / "myops-server", os.X_OK):
            parser.error(f"{build}: no executable server/myops-server")
    try:
        sizes = [(s.strip(), parse_size(s)) for s in args.sizes.split(",") if s.strip()]
    except argparse.ArgumentTypeError as e:
        parser.error(str(e))
    concurrencies = [int(c) for c in args.concurrency.split(",") if c.strip()]
    if any(c < 1 for c in concurrencies) or args.rounds < 1 or args.seconds <= 0:
        parser.error("concurrency and rounds must be at least 1, seconds positive")
    if max(concurrencies) > 64:
        print("note: the new server takes at most 64 REST connections per address "
              "(--http-max-connections-per-address)", file=sys.stderr)
    points = [(label, nbytes, c) for label, nbytes in sizes for c in concurrencies]

    servers = {side: Server(side, build.resolve())
               for side, build in zip(SIDES, (args.old, args.new))}
    rounds = {f"{label} c{c}": [] for label, _, c in points}
    try:
        for s in servers.values():
            s.wait_ready()
        body_bytes = {}
        requests = {}
        for label, nbytes in sizes:
            for side, s in servers.items():
                body_bytes[side, nbytes] = verify(s.http, nbytes)
                requests[side, nbytes] = make_request(s.http, nbytes)[0]
        ports = ", ".join(f"{k} :{v.http[1]}" for k, v in servers.items())
        print(f"old: {args.old}  new: {args.new}  (REST {ports}); outputs verified; "
              f"load average {os.getloadavg()[0]:.2f}", flush=True)
        for r in range(args.rounds):
            order = SIDES if r % 2 == 0 else SIDES[::-1]
            for label, nbytes, c in points:
                row = {"round": r + 1, "first": order[0]}
                for side in order:
                    row[side] = phase(servers[side], requests[side, nbytes],
                                      body_bytes[side, nbytes], c, args.seconds, args.warmup)
                    servers[side].check_alive()
                rounds[f"{label} c{c}"].append(row)
                print(f"round {r + 1} {label} c{c}: " + "  ".join(
                    f"{side} p50 {row[side]['p50_us']:.1f} us {row[side]['req_per_s']:.0f} req/s "
                    f"{row[side]['cpu_us_per_request']:.1f} CPU us/req" for side in SIDES),
                    flush=True)
    finally:
        for s in servers.values():
            s.stop()

    results = []
    for label, nbytes, c in points:
        rows = rounds[f"{label} c{c}"]
        ratio = {
            "p50": [x["new"]["p50_us"] / x["old"]["p50_us"] for x in rows],
            "req_per_s": [x["new"]["req_per_s"] / x["old"]["req_per_s"] for x in rows],
            "cpu_per_request": [x["new"]["cpu_us_per_request"] / x["old"]["cpu_us_per_request"]
                                if x["old"]["cpu_us_per_request"] > 0 else float("nan")
                                for x in rows]}
        for i, x in enumerate(rows):
            x["new_over_old"] = {k: v[i] for k, v in ratio.items()}
        med = {k: summary(v) for k, v in ratio.items()}
        results.append({"size": label, "bytes": nbytes, "concurrency": c, "rounds": rows,
                        "median_new_over_old": med})
        print(f"\n{label}, concurrency {c}")
        print("| round | first | old p50 us | new p50 us | old req/s | new req/s "
              "| old CPU us/req | new CPU us/req |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- |")
        for x in rows:
            o, n = x["old"], x["new"]
            print(f"| {x['round']} | {x['first']} | {o['p50_us']:.1f} | {n['p50_us']:.1f} "
                  f"| {o['req_per_s']:.0f} | {n['req_per_s']:.0f} "
                  f"| {o['cpu_us_per_request']:.1f} | {n['cpu_us_per_request']:.1f} |")
        print("median new/old: " + "  ".join(
            f"{name} {m['median']:.3f}x ({m['min']:.3f}-{m['max']:.3f})" for name, m in
            (("p50", med["p50"]), ("req/s", med["req_per_s"]),
             ("CPU/req", med["cpu_per_request"]))))
    out = pathlib.Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({
        "benchmark": "rest_ab", "old": str(args.old), "new": str(args.new),
        "model": MODEL, "seconds": args.seconds, "warmup": args.warmup,
        "rounds": args.rounds, "clock_ticks_per_s": TICKS, "cpus": os.cpu_count(),
        "results": results}, indent=2) + "\n")
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
