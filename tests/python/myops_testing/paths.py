"""Where the tests find the repository and the build (MYOPS_BUILD_DIR, default build/)."""

import os
import pathlib

REPO = pathlib.Path(__file__).resolve().parents[3]
BUILD = pathlib.Path(os.environ.get("MYOPS_BUILD_DIR", REPO / "build"))
SERVER = BUILD / "server" / "myops-server"
ECHO_SERVER = BUILD / "bench" / "echo_server" / "echo_server"  # answers every call with its input
