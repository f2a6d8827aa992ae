"""Fixtures of the hostile-client suite: real myops-server processes (started by the
client tests' Server helper) and raw gRPC channels that send whatever bytes a test
crafts."""

from __future__ import annotations

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "client"))
