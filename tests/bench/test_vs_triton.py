"""bench/vs_triton.sh, myops-server against the real Triton server with the hand-written
scaleshift backend: it runs end to end (one round, 1 KiB, a few requests) and prints each
round's figures and the median table with sane numbers; with --slices the two servers take
turns slice by slice and each side's figures add up over its slices; malformed --sides,
--slices and a backend folder without a backend are refused; --client tritonclient calls both
with tritonclient.grpc, --client perf_analyzer with Triton's perf_analyzer. Skipped where tritonserver (nvidia-pytriton) is not
installed. bench/triton_backends.sh (the myops backend against the peer) has its own test."""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from myops_testing.paths import BUILD, REPO
from myops_testing.triton import TRITONSERVER

SCRIPT = REPO / "bench" / "vs_triton.sh"
NUMBER = r"\d+\.\d"
CELL = rf"({NUMBER}+) \({NUMBER}+\.\.{NUMBER}+\)"

pytestmark = pytest.mark.skipif(
    TRITONSERVER is None, reason="tritonserver not installed (nvidia-pytriton: scripts/bootstrap.sh)")


def run(tmp_path, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(SCRIPT), "--myops-build", str(BUILD), "--out", str(tmp_path / "out"),
                           *flags], capture_output=True, text=True, timeout=600)


def test_one_round_prints_sane_figures(tmp_path):
    if not (BUILD / "bench" / "peers" / "triton_scale_shift" / "libtriton_scaleshift.so").exists():
        pytest.fail("the scaleshift backend is not built (myops_build --target triton_scaleshift)")
    result = run(tmp_path, "--rounds", "1", "--sizes", "1KiB", "--concurrency", "1",
                 "--requests", "200", "--warmup", "0")
    assert result.returncode == 0, result.stdout + result.stderr
    # myops-loadtest's closed loop on callbacks, unless the flags choose threads.
    assert "myops-loadtest --protocol kserve --driver callbacks," in result.stderr, result.stderr
    side = rf"({NUMBER}+) req/s, p50 ({NUMBER}+) us, p99 ({NUMBER}+) us, CPU ({NUMBER}+) us/req"
    found = re.search(rf"^1KiB conc 1 round 1: myops {side}; Triton {side}; "
                      rf"myops/Triton req/s ({NUMBER}+), CPU/req ({NUMBER}+)$", result.stdout, re.M)
    assert found, result.stdout
    values = [float(v) for v in found.groups()]
    for rps, p50, p99, cpu in (values[0:4], values[4:8]):
        assert rps > 0 and 0 < p50 <= p99 and cpu >= 0, result.stdout
    assert abs(values[8] - values[0] / values[4]) < 0.01, result.stdout
    if values[7] > 0:
        assert values[9] == pytest.approx(values[3] / values[7], abs=0.01), result.stdout
    row = re.search(rf"^1KiB\s+1\s+{CELL}" + rf"\s+{CELL}" * 7 + r"\s*$", result.stdout, re.M)
    assert row, result.stdout
    assert float(row.group(1)) == pytest.approx(values[8], abs=0.001)


def test_sides_other_than_two_labelled_servers_are_refused(tmp_path):
    for sides in ("myops=server", "a=server,a=triton", "a=server,b=nginx", "server,triton"):
        result = run(tmp_path, "--rounds", "1", "--sizes", "1KiB", "--requests", "10", "--sides", sides)
        assert result.returncode == 2, sides
        assert f"--sides {sides}: " in result.stderr, result.stderr


def test_a_folder_without_a_backend_is_refused(tmp_path):
    result = run(tmp_path, "--rounds", "1", "--sizes", "1KiB", "--concurrency", "1",
                 "--requests", "10", "--warmup", "0", "--triton-backend", str(tmp_path))
    assert result.returncode == 2
    assert "must hold one libtriton_<name>.so" in result.stderr


def test_slices_take_turns_and_add_up(tmp_path):
    """--slices 3: each side measured in three slices, in the turns A B | B A | A B, and the
    round's CPU per request is the CPU of all three over all the requests they answered."""
    if not (BUILD / "bench" / "peers" / "triton_scale_shift" / "libtriton_scaleshift.so").exists():
        pytest.fail("the scaleshift backend is not built (myops_build --target triton_scaleshift)")
    result = run(tmp_path, "--rounds", "1", "--sizes", "1KiB", "--concurrency", "1",
                 "--requests", "150", "--warmup", "0", "--slices", "3")
    assert result.returncode == 0, result.stdout + result.stderr
    out = tmp_path / "out"
    cpu_files = sorted(out.glob("1.1KiB.1.*.cpu"), key=lambda p: p.stat().st_mtime_ns)
    turns = [p.name.split(".")[3:5] for p in cpu_files]
    assert turns == [["myops", "1"], ["Triton", "1"], ["Triton", "2"], ["myops", "2"],
                     ["myops", "3"], ["Triton", "3"]], turns
    side = rf"({NUMBER}+) req/s, p50 ({NUMBER}+) us, p99 ({NUMBER}+) us, CPU ({NUMBER}+) us/req"
    found = re.search(rf"^1KiB conc 1 round 1: myops {side}; Triton {side};", result.stdout, re.M)
    assert found, result.stdout
    for label, printed in (("myops", float(found.group(4))), ("Triton", float(found.group(8)))):
        answered = cpu = 0.0
        for k in (1, 2, 3):
            row = json.loads((out / f"1.1KiB.1.{label}.{k}.json").read_text())["points"][0]
            assert row["requests_ok"] >= 50, row  # 150 requests over 3 slices, at least
            answered += row["requests_ok"] + row["errors"]
            before, after = map(float, (out / f"1.1KiB.1.{label}.{k}.cpu").read_text().split())
            cpu += after - before
        assert printed == pytest.approx(1e6 * cpu / answered, abs=0.06), (label, result.stdout)


def test_slices_must_be_a_whole_number(tmp_path):
    for slices in ("0", "-1", "2.5", "x"):
        result = run(tmp_path, "--rounds", "1", "--sizes", "1KiB", "--requests", "10",
                     "--slices", slices)
        assert result.returncode == 2, slices
        assert f"--slices {slices}: expected a whole number" in result.stderr, result.stderr


def test_tritonclient_as_the_client(tmp_path):
    """--client tritonclient: both servers called by tritonclient.grpc (bench/
    tritonclient_load.py), the requests asked for each answered in full, the same figures
    printed; a misspelt client and loadtest flags with it are refused."""
    if not (BUILD / "bench" / "peers" / "triton_scale_shift" / "libtriton_scaleshift.so").exists():
        pytest.fail("the scaleshift backend is not built (myops_build --target triton_scaleshift)")
    result = run(tmp_path, "--client", "tritonclient", "--rounds", "1", "--sizes", "64KiB",
                 "--concurrency", "2", "--requests", "60", "--warmup", "0")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "tritonclient --protocol kserve" in result.stderr, result.stderr
    for label in ("myops", "Triton"):
        data = json.loads((tmp_path / "out" / f"1.64KiB.2.{label}.1.json").read_text())
        assert data["client"] == "tritonclient.grpc", data
        row = data["points"][0]
        assert row["requests_ok"] == 60 and row["payload_bytes"] == 65536, row
        assert 0 < row["latency_us"]["p50"] <= row["latency_us"]["p99"], row
    side = rf"({NUMBER}+) req/s, p50 ({NUMBER}+) us, p99 ({NUMBER}+) us, CPU ({NUMBER}+) us/req"
    assert re.search(rf"^64KiB conc 2 round 1: myops {side}; Triton {side}; ", result.stdout, re.M), \
        result.stdout
    refused = run(tmp_path, "--client", "grpcurl", "--rounds", "1", "--requests", "10")
    assert refused.returncode == 2 and "--client grpcurl: expected" in refused.stderr, refused.stderr
    refused = run(tmp_path, "--client", "tritonclient", "--rounds", "1", "--requests", "10",
                  "--dtype", "float16")
    assert refused.returncode == 2 and "takes no myops-loadtest flags" in refused.stderr, \
        refused.stderr


def test_perf_analyzer_as_the_client(tmp_path):
    """--client perf_analyzer: both servers loaded by Triton's perf_analyzer (bench/
    perf_analyzer_load.py, installed by bench/peers/perf_analyzer.sh), each side's
    requests counted by the server itself, the same figures printed; loadtest flags with it
    are refused."""
    if not (BUILD / "bench" / "peers" / "triton_scale_shift" / "libtriton_scaleshift.so").exists():
        pytest.fail("the scaleshift backend is not built (myops_build --target triton_scaleshift)")
    result = run(tmp_path, "--client", "perf_analyzer", "--rounds", "1", "--sizes", "64KiB",
                 "--concurrency", "2", "--duration", "0.6", "--warmup", "0")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "perf_analyzer --protocol kserve ," in result.stderr, result.stderr
    for label in ("myops", "Triton"):
        data = json.loads((tmp_path / "out" / f"1.64KiB.2.{label}.1.json").read_text())
        assert data["client"] == "perf_analyzer 2.51.0", data
        row = data["points"][0]
        # What the server answered over the run: at least the three windows of 0.2 s at
        # the rate perf_analyzer measured in them.
        assert row["requests_ok"] >= 0.6 * row["throughput_rps"] * 0.9 > 0, row
        assert row["payload_bytes"] == 65536 and row["errors"] == 0, row
        assert 0 < row["latency_us"]["p50"] <= row["latency_us"]["p99"], row
    side = rf"({NUMBER}+) req/s, p50 ({NUMBER}+) us, p99 ({NUMBER}+) us, CPU ({NUMBER}+) us/req"
    assert re.search(rf"^64KiB conc 2 round 1: myops {side}; Triton {side}; ", result.stdout, re.M), \
        result.stdout
    refused = run(tmp_path, "--client", "perf_analyzer", "--rounds", "1", "--duration", "1",
                  "--driver", "threads")
    assert refused.returncode == 2 and "takes no myops-loadtest flags" in refused.stderr, \
        refused.stderr
    refused = run(tmp_path, "--client", "perf_analyzer", "--rounds", "1", "--requests", "10")
    assert refused.returncode == 2 and "give --duration, not --requests" in refused.stderr, \
        refused.stderr
