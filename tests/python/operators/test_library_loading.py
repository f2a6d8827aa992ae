"""--load-library of a library whose loading throws: the server stops at start-up with
status 1 and an error that names the library and what it threw, as for any other bad
flag, instead of aborting (a throwing static initializer ends in std::terminate)."""

from __future__ import annotations

import os
import subprocess

import pytest

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


@pytest.mark.parametrize("flag", ["--load-library", "--libpython"])
def test_a_library_that_is_a_fifo_stops_the_server_at_once(tmp_path, flag):
    # dlopen of a FIFO blocks in open() until a writer comes: start-up hung, silent.
    fifo = tmp_path / "libops.so"
    os.mkfifo(fifo)
    result = subprocess.run(
        [str(SERVER), "--address", "127.0.0.1:0", "--devices", "cpu", flag, str(fifo)],
        capture_output=True, text=True, timeout=60, check=False)
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    named = f"operator library {fifo}" if flag == "--load-library" else f"--libpython {fifo}"
    assert f"cannot load {named}: it is a FIFO, not a regular file" in output, output
