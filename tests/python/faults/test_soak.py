"""The 60-second version of bench/soak.sh (the full soak runs for 10 minutes, outside
CI): mixed traffic against the real myops-server, then memory, unexpected failures,
and fds/threads back at their baseline, all judged by bench/soak/soak.py."""

from __future__ import annotations

import json
import subprocess
import sys

from myops_testing import BUILD, REPO, SERVER


def test_soak_sixty_seconds(tmp_path):
    loadtest = BUILD / "bench" / "loadtest" / "myops-loadtest"
    result = subprocess.run(
        [sys.executable, str(REPO / "bench" / "soak" / "soak.py"), "--server", str(SERVER),
         "--loadtest", str(loadtest), "--duration", "60", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=900)
    report = json.loads((tmp_path / "soak.json").read_text())
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
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
