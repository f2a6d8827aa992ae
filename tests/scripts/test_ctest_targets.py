"""scripts/ctest_targets.py: what the sanitized tree builds is what CTest runs. On the
configured normal build it finds every GoogleTest executable and every program and library
a script test is given, and nothing that is not a build output; on a made-up tree, each
way CTest's files name a target."""

import pathlib
import subprocess
import sys

from myops_testing import BUILD, REPO

SCRIPT = REPO / "scripts" / "ctest_targets.py"


def targets(build):
    result = subprocess.run([sys.executable, str(SCRIPT), str(build)], capture_output=True,
                            text=True, check=False)
    return result.returncode, result.stdout.split(), result.stderr


def test_the_normal_build_lists_what_its_tests_run():
    code, found, err = targets(BUILD)
    assert code == 0, err
    # GoogleTest executables: by path (their shards' command) or, one CTest test per
    # GoogleTest test, by name (their discovery files).
    names = {f.rsplit("/", 1)[-1] for f in found}
    for suite in ("server_test", "server_exec_test", "client_test", "ops_test", "wire_test"):
        assert suite in names, (suite, found)
    # Programs and libraries given to script tests (server_cli_call_e2e, loadtest_smoke).
    for path in ("server/myops-server", "client/cpp/myops-cli", "bench/loadtest/myops-loadtest",
                 "tests/server/libmyops_test_ops.so", "tests/fuzz/npy_replay"):
        assert path in found, (path, found)
    # Only build outputs: never the tests' scripts, the interpreter or a build directory.
    assert not any(f.endswith(".sh") or f.startswith("/") for f in found), found
    assert len(found) == len(set(found))
    # Nothing that no CTest test runs: the Triton backend, the pipeline benchmark.
    assert not any("triton_myops" in f or "pipeline-bench" in f for f in found), found


def test_a_made_up_tree(tmp_path):
    build = tmp_path / "b"
    (build / "t").mkdir(parents=True)
    (build / "build.ninja").write_text(
        "rule touch\n  command = touch $out\n"
        "build t/prog: touch\nbuild t/lib.so: touch\nbuild t/unused: touch\n")
    (build / "t" / "CTestTestfile.cmake").write_text(
        f'include("{build}/t/suite_test[1]_include.cmake")\n'
        f'add_test([=[script]=] "/src/t/run.sh" "{build}/t/prog" "/usr/bin/python3")\n'
        f'set_tests_properties([=[script]=] PROPERTIES ENVIRONMENT "LIB={build}/t/lib.so;X=1")\n'
        f'add_test([=[dir]=] "{build}/t/prog" "{build}/t/data")\n')
    code, found, err = targets(build)
    assert code == 0, err
    assert found == ["suite_test", "t/prog", "t/lib.so"]


def test_a_tree_without_tests_is_an_error(tmp_path):
    (tmp_path / "build.ninja").write_text("rule touch\n  command = touch $out\nbuild a: touch\n")
    code, found, err = targets(tmp_path)
    assert code == 1 and found == [] and "no CTest tests" in err
