"""CTest's shards of the GoogleTest executables (tests/CMakeLists.txt, myops_gtest) run
every test exactly once: each executable's shards are numbered 0..n-1 of n, and the tests
the shards of ops_test run, added up, are the tests it lists."""

import collections
import os
import re
import subprocess

from myops_testing import BUILD

SHARD = re.compile(r'set_tests_properties\(\[=\[(\w+)\.shard(\d+)\]=\] PROPERTIES .*'
                   r'ENVIRONMENT "GTEST_TOTAL_SHARDS=(\d+);GTEST_SHARD_INDEX=(\d+)"')


def shards():
    found = collections.defaultdict(list)
    for testfile in BUILD.rglob("CTestTestfile.cmake"):
        for name, index, total, env_index in SHARD.findall(testfile.read_text()):
            assert index == env_index, (name, index, env_index)
            found[name].append((int(index), int(total)))
    return found


def test_every_executable_is_cut_into_all_of_its_shards():
    found = shards()
    assert {"server_test", "client_test", "ops_test", "wire_test"} <= set(found), found
    for name, parts in found.items():
        total = parts[0][1]
        assert sorted(parts) == [(i, total) for i in range(total)], (name, parts)
    assert found["server_test"][0][1] > 1


def test_the_shards_of_ops_test_run_each_test_once():
    program = BUILD / "tests" / "ops" / "ops_test"
    listing = subprocess.run([str(program), "--gtest_list_tests"], capture_output=True,
                             text=True, check=True).stdout
    listed, suite = [], ""
    for line in listing.splitlines():
        if not line.startswith(" "):
            suite = line.split()[0]
        else:
            listed.append(suite + line.split()[0])
    (total,) = {t for _, t in shards()["ops_test"]}
    ran = []
    for index in range(total):
        env = {**os.environ, "GTEST_TOTAL_SHARDS": str(total), "GTEST_SHARD_INDEX": str(index)}
        out = subprocess.run([str(program)], capture_output=True, text=True, env=env,
                             check=True).stdout
        ran += re.findall(r"^\[ RUN      \] (\S+)", out, re.M)
    assert listed and sorted(ran) == sorted(listed), (len(ran), len(listed))
