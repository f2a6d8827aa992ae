"""The 60-second version of bench/soak.sh (the full soak runs for 10 minutes, outside
CI): mixed traffic against the real myops-server, then memory, unexpected failures,
and fds/threads back at their baseline, all judged by bench/soak/soak.py."""

from __future__ import annotations

import json
import subprocess
import sys

from fault_helpers import BUILD, REPO, SERVER


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
