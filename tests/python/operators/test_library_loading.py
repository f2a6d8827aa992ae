"""--load-library of a library whose loading throws: the server stops at start-up with
status 1 and an error that names the library and what it threw, as for any other bad
flag, instead of aborting (a throwing static initializer ends in std::terminate)."""

from __future__ import annotations

import subprocess

from myops_testing import BUILD, SERVER

THROWING = BUILD / "tests" / "server" / "libmyops_test_throwing_ops.so"


def test_a_library_whose_loading_throws_stops_the_server_with_its_error():
    assert THROWING.exists(), f"{THROWING} not found: build the tests first"
    result = subprocess.run(
        [str(SERVER), "--address", "127.0.0.1:0", "--devices", "cpu",
         "--load-library", str(THROWING)],
        capture_output=True, text=True, timeout=120, check=False)
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert f"cannot load operator library {THROWING}: its initialization threw:" in output
    assert "Only a single TORCH_LIBRARY can be used to register the namespace myops" in output
    assert "terminate called" not in output and "frame #" not in output
