"""bench/ab_servers.sh, the before/after comparison of two server builds: it runs end to
end (here one build against itself, a few requests) and prints, per size, every round's
p50 and CPU-per-request ratios and their medians; bad build directories are refused."""

from __future__ import annotations

import re
import subprocess

from myops_testing.paths import BUILD, REPO

SCRIPT = REPO / "bench" / "ab_servers.sh"
RATIO = r"\d+\.\d{3}"


def test_one_build_against_itself_prints_the_ratios():
    result = subprocess.run(
        ["bash", str(SCRIPT), str(BUILD), str(BUILD), "--rounds", "2", "--sizes", "1KiB,64KiB",
         "--requests", "40"], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    for size in ("1KiB", "64KiB"):
        rounds = re.findall(rf"^{size} round \d: p50 old [\d.]+ us, new [\d.]+ us \({RATIO}\); "
                            rf"server CPU per request old [\d.]+ us, new [\d.]+ us \(({RATIO}|nan)\)$",
                            result.stdout, re.M)
        assert len(rounds) == 2, result.stdout
        assert re.search(rf"^{size} median new/old: p50 {RATIO} \({RATIO}\.\.{RATIO}\), server CPU "
                         rf"per request", result.stdout, re.M), result.stdout


def test_a_directory_without_a_server_is_refused(tmp_path):
    result = subprocess.run(["bash", str(SCRIPT), str(tmp_path), str(BUILD)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "each must hold server/myops-server" in result.stderr
