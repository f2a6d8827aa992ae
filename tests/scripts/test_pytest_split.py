"""scripts/pytest.sh's split: the hostile and fault suites and the tests that time a call
are marked `serial` (run alone, after the rest), and nothing else is."""

import subprocess
import sys

from myops_testing import REPO

FILES = ["tests/python/hostile/test_shares.py", "tests/python/faults/test_soak.py",
         "tests/python/client/test_client_errors.py"]


def collected(marker):
    result = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                             "-p", "no:cacheprovider", "-m", marker, *FILES],
                            cwd=REPO, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    return {line.split("::")[0].rsplit("/", 2)[-2] + "::" + line.split("::", 1)[1]
            for line in result.stdout.splitlines() if "::" in line}


def test_attacks_faults_and_timed_calls_run_alone():
    serial = collected("serial")
    rest = collected("not serial")
    assert serial and rest and not serial & rest
    assert any(t.startswith("hostile::") for t in serial)
    assert any(t.startswith("faults::") for t in serial)
    assert not any(t.startswith(("hostile::", "faults::")) for t in rest), rest
    assert "client::test_deadline_exceeded_silent_server" in serial
    # The client suite's other tests share the cores.
    assert any(t.startswith("client::") for t in rest)
