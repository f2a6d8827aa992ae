"""bench/triton_backends.sh, the myops Triton backend against the hand-written scaleshift
backend in the same tritonserver: it runs end to end (one round, 1 KiB, a few requests)
and prints each round's figures, the median table with the ratios myops-backend/peer and
issue 26's CPU gate at 1 KiB with sane numbers. Skipped where tritonserver
(nvidia-pytriton) is not installed."""

from __future__ import annotations

import re
import subprocess

import pytest

from myops_testing.paths import BUILD, REPO
from myops_testing.triton import TRITONSERVER

SCRIPT = REPO / "bench" / "triton_backends.sh"
NUMBER = r"\d+\.\d"
CELL = rf"({NUMBER}+) \({NUMBER}+\.\.{NUMBER}+\)"
BACKENDS = (BUILD / "backends" / "triton" / "myops" / "libtriton_myops.so",
            BUILD / "bench" / "peers" / "triton_scale_shift" / "libtriton_scaleshift.so")

pytestmark = pytest.mark.skipif(
    TRITONSERVER is None, reason="tritonserver not installed (nvidia-pytriton: scripts/bootstrap.sh)")


def test_one_round_prints_sane_figures_and_the_gate(tmp_path):
    for library in BACKENDS:
        if not library.exists():
            pytest.fail(f"{library} is not built (myops_build --target triton_myops triton_scaleshift)")
    result = subprocess.run(
        ["bash", str(SCRIPT), "--myops-build", str(BUILD), "--out", str(tmp_path / "out"),
         "--rounds", "1", "--sizes", "1KiB", "--concurrency", "1", "--requests", "200",
         "--warmup", "0"], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    # Both servers are Tritons, one per backend, each with its generated model.
    configs = {p.parent.parent.parent.name: p.read_text()
               for p in (tmp_path / "out").glob("*/models/*/config.pbtxt")}
    assert set(configs) == {"myops-backend1", "peer1"}, configs
    assert configs["myops-backend1"].startswith(
        'backend: "myops"\nparameters { key: "op" value { string_value: "myops::scale_shift" } }\n')
    assert 'backend: "scaleshift"' in configs["peer1"]

    side = rf"({NUMBER}+) req/s, p50 ({NUMBER}+) us, p99 ({NUMBER}+) us, CPU ({NUMBER}+) us/req"
    found = re.search(rf"^1KiB conc 1 round 1: myops-backend {side}; peer {side}; "
                      rf"myops-backend/peer req/s ({NUMBER}+), CPU/req ({NUMBER}+)$", result.stdout, re.M)
    assert found, result.stdout
    values = [float(v) for v in found.groups()]
    for rps, p50, p99, cpu in (values[0:4], values[4:8]):
        assert rps > 0 and 0 < p50 <= p99 and cpu > 0, result.stdout
    assert values[8] == pytest.approx(values[0] / values[4], abs=0.01), result.stdout
    assert values[9] == pytest.approx(values[3] / values[7], abs=0.01), result.stdout
    assert re.search(r"^size\s+conc\s+req/s myops-backend/peer\s+CPU/req myops-backend/peer\s",
                     result.stdout, re.M), result.stdout
    row = re.search(rf"^1KiB\s+1\s+{CELL}" + rf"\s+{CELL}" * 7 + r"\s*$", result.stdout, re.M)
    assert row, result.stdout
    assert float(row.group(1)) == pytest.approx(values[8], abs=0.001)
    assert float(row.group(2)) == pytest.approx(values[9], abs=0.001)
    gate = re.search(rf"^gate: CPU per request myops-backend/peer at 1KiB, conc 1: median ({NUMBER}+) "
                     rf"\({NUMBER}+\.\.{NUMBER}+\), at most 1.10: (met|NOT met)$", result.stdout, re.M)
    assert gate, result.stdout
    assert float(gate.group(1)) == pytest.approx(values[9], abs=0.001)
    if abs(float(gate.group(1)) - 1.10) > 0.001:  # printed rounded: the verdict decides at the limit
        assert (gate.group(2) == "met") == (float(gate.group(1)) <= 1.10), result.stdout
