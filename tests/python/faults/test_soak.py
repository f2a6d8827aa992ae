"""The 60-second version of bench/soak.sh (the full soak runs for 10 minutes, outside
CI): mixed traffic against the real myops-server, then memory, unexpected failures,
and fds/threads back at their baseline, all judged by bench/soak/soak.py."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request

from myops_testing import BUILD, REPO, SERVER


def test_soak_sixty_seconds(tmp_path):
    loadtest = BUILD / "bench" / "loadtest" / "myops-loadtest"
    result = subprocess.run(
        [sys.executable, str(REPO / "bench" / "soak" / "soak.py"), "--server", str(SERVER),
         "--loadtest", str(loadtest), "--duration", "60", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=900)
    output = result.stdout[-4000:] + result.stderr[-4000:]
    assert (tmp_path / "soak.json").exists(), f"soak.py exited {result.returncode}:\n{output}"
    report = json.loads((tmp_path / "soak.json").read_text())
    assert result.returncode == 0, output
    assert report["passed"] and all(report["checks"].values()), report["checks"]
    assert report["loadtest"]["requests_ok"] > 0
    assert report["driver"]["counts"]["ok"].get("OK", 0) > 0
    assert (tmp_path / "soak.png").stat().st_size > 0


def test_threads_back_allows_only_grpc_pools_a_little_slack():
    sys.path.insert(0, str(REPO / "bench" / "soak"))
    import soak
    base = {"threads": 20, "thread_names": {"grpc_global_tim": 1, "civetweb-worker": 16,
                                            "myops-server": 3}}
    same = {"threads": 20, "thread_names": dict(base["thread_names"])}
    timer = {"threads": 21, "thread_names": {**base["thread_names"], "grpc_global_tim": 2}}
    ours = {"threads": 21, "thread_names": {**base["thread_names"], "myops-server": 4}}
    pools = {"threads": 23, "thread_names": {**base["thread_names"], "grpc_global_tim": 4}}
    assert soak.threads_back(same, base)
    assert soak.threads_back(timer, base)  # gRPC's timer pool kept one more thread
    assert not soak.threads_back(ours, base)  # a thread of the server's own: a leak
    assert not soak.threads_back(pools, base)  # past the slack


def test_memory_back_catches_a_leak_that_rss_hides():
    """The rule reads the heap in use, not RSS: a clean run's heap returns to its baseline
    while its RSS grew 22 MiB (the allocator's cache); a leak of 256 bytes a request over
    ~110k requests (27 MiB) does not return. Without the gauge (sanitizer builds) the
    rule has nothing to judge."""
    sys.path.insert(0, str(REPO / "bench" / "soak"))
    import soak
    mib = 1 << 20
    baseline = {"rss_mib": 680.6, soak.HEAP: 120 * mib}
    clean = {"rss_mib": 702.5, soak.HEAP: 121 * mib}
    leaked = {"rss_mib": 702.5, soak.HEAP: 120 * mib + 110_000 * 256}
    assert soak.memory_back(clean, baseline)
    assert not soak.memory_back(leaked, baseline)
    assert soak.memory_back({"rss_mib": 1}, {"rss_mib": 1})


def test_a_leaking_server_fails_the_memory_rule():
    """The negative control on a real server: its heap gauge after holding 32 MiB more
    (a process that keeps what it allocates, serving the same gauge) fails the rule."""
    sys.path.insert(0, str(REPO / "bench" / "soak"))
    import soak
    script = ("import http.server, sys\n"
              "kept = []\n"
              "class H(http.server.BaseHTTPRequestHandler):\n"
              "    def do_GET(self):\n"
              "        if self.path == '/leak': kept.append(bytearray(32 << 20))\n"
              "        body = f'myops_heap_in_use_bytes {100 + sum(map(len, kept))}\\n'.encode()\n"
              "        self.send_response(200); self.end_headers(); self.wfile.write(body)\n"
              "    def log_message(self, *a): pass\n"
              "s = http.server.HTTPServer(('127.0.0.1', 0), H)\n"
              "print(s.server_address[1], flush=True)\n"
              "s.serve_forever()\n")
    p = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        port = int(p.stdout.readline())
        probe = soak.Soak.__new__(soak.Soak)  # only its gauge reader
        probe.metrics_address = f"127.0.0.1:{port}"
        baseline = probe.gauges()
        assert soak.memory_back(probe.gauges(), baseline)
        urllib.request.urlopen(f"http://127.0.0.1:{port}/leak", timeout=30).read()
        assert not soak.memory_back(probe.gauges(), baseline)
    finally:
        p.kill()
        p.wait(timeout=30)
