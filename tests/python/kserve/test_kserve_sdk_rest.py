"""The KServe Python SDK's REST client against the HTTP/REST front end: each check of
kserve_sdk_rest_checks.py in its own interpreter (the SDK and tritonclient cannot share
one: both register the protocol's messages in protobuf's process-wide pool)."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

CHECKS = pathlib.Path(__file__).resolve().parent / "kserve_sdk_rest_checks.py"


@pytest.mark.parametrize("check", ["readiness", "infer_json", "infer_binary",
                                   "scalars_and_outputs", "errors"])
def test_kserve_sdk_rest(kserve_server, check):
    out = subprocess.run([sys.executable, str(CHECKS), kserve_server.http_address, check],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and f"passed {check}" in out.stdout, out.stdout + out.stderr
