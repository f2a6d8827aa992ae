"""CPU dry run of bench/gpu/check.sh on a bundle made by bench/gpu/bundle.sh from this build.

The GPU check runs only where a GPU is lent, so these tests keep it from rotting: the
bundle must be complete, match this torch, carry CUDA machine code and PTX, and resolve
every library to the bundle, the torch wheel or the system's glibc/GCC runtime; each
kind of broken bundle must fail loudly. Skipped for CPU-only builds (no CUDA bundle).
"""

import os
import pathlib
import shutil
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("MYOPS_BUILD_DIR", REPO / "build"))
CHECK = REPO / "bench" / "gpu" / "check.sh"
LIBMYOPS = BUILD / "python" / "myops" / "libmyops.so"


def is_cuda_build():
    if not LIBMYOPS.exists():
        return False
    dynamic = subprocess.run(["readelf", "-d", str(LIBMYOPS)], capture_output=True, text=True).stdout
    return "libc10_cuda" in dynamic


pytestmark = pytest.mark.skipif(not is_cuda_build(), reason="CPU-only build: no CUDA bundle to check")


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    out = tmp_path_factory.mktemp("gpu") / "bundle"
    env = dict(os.environ, PYTHON=sys.executable)
    made = subprocess.run([str(REPO / "bench" / "gpu" / "bundle.sh"), "--from", str(BUILD), "--out", str(out)],
                          env=env, capture_output=True, text=True)
    assert made.returncode == 0, made.stderr + made.stdout
    return out


def dry_run(bundle_dir):
    env = dict(os.environ, PYTHON=sys.executable, MYOPS_GPU_BUNDLE=str(bundle_dir))
    return subprocess.run([str(CHECK), "--dry-run"], env=env, capture_output=True, text=True)


@pytest.fixture()
def broken(bundle, tmp_path):
    """A copy of the bundle for a test to break."""
    copy = tmp_path / "bundle"
    shutil.copytree(bundle, copy)
    return copy


def test_bundle_passes_and_the_commands_are_listed(bundle):
    r = dry_run(bundle)
    assert r.returncode == 0, r.stderr + r.stdout
    assert "ldd: every library" in r.stdout
    assert "sm_90.cubin" in r.stdout and "sm_90.ptx" in r.stdout
    commands = r.stdout.split("=== dry run: the commands a run on a GPU machine runs, in order\n")[1]
    for expected in ("bin/ops_test", "bin/server_exec_test", "bin/server_test", "bin/server_e2e_test",
                     "-m pytest", "ops_bench.py --device cuda", "bench/gpu/serve.sh"):
        assert expected in commands, expected
    # The CUDA runtime the binaries load directly comes from the torch wheel.
    assert "nvidia/cu13/lib" in commands
    assert "cmake" not in commands  # nothing is built where a bundle is carried


def test_bundle_holds_no_glibc_library(bundle):
    # bundle.sh once copied glibc's libutil.so.1, which then shadowed the GPU machine's.
    assert not [p.name for p in (bundle / "lib").iterdir() if p.name.startswith(("libutil.", "libc.", "libm."))]


def test_missing_bundle_fails_and_says_to_carry_it(tmp_path):
    r = dry_run(tmp_path / "absent")
    assert r.returncode != 0
    assert "no bundle at" in r.stderr and "carry" in r.stderr


def test_missing_test_binary_fails(broken):
    (broken / "bin" / "server_exec_test").unlink()
    r = dry_run(broken)
    assert r.returncode != 0
    assert "the bundle is incomplete, missing: bin/server_exec_test" in r.stderr


def test_torch_version_mismatch_fails(broken):
    (broken / "TORCH_VERSION").write_text("2.10.0+cu130\n")
    r = dry_run(broken)
    assert r.returncode != 0
    assert "the bundle was built for torch 2.10.0+cu130" in r.stderr


def test_glibc_library_in_the_bundle_fails(broken):
    libutil = next(p for p in map(pathlib.Path, ("/lib/x86_64-linux-gnu/libutil.so.1", "/lib64/libutil.so.1"))
                   if p.exists())
    shutil.copy(libutil, broken / "lib" / "libutil.so.1")
    r = dry_run(broken)
    assert r.returncode != 0
    assert "glibc/GCC runtime libraries in the bundle" in r.stderr and "libutil.so.1" in r.stderr


def test_library_missing_from_the_bundle_fails(broken):
    grpc = next((broken / "lib").glob("libgrpc++.so*"))
    grpc.unlink()
    manifest = broken / "MANIFEST"
    manifest.write_text("".join(l for l in manifest.read_text().splitlines(True) if grpc.name not in l))
    r = dry_run(broken)
    assert r.returncode != 0
    assert "libraries found outside the bundle and the torch wheel" in r.stderr
    assert grpc.name in r.stderr


def test_arch_list_without_ptx_fails(broken):
    (broken / "TORCH_CUDA_ARCH_LIST").write_text("9.0\n")
    r = dry_run(broken)
    assert r.returncode != 0
    assert "have no +PTX" in r.stderr


def test_arch_without_machine_code_fails(broken):
    (broken / "TORCH_CUDA_ARCH_LIST").write_text("8.0;9.0+PTX\n")
    r = dry_run(broken)
    assert r.returncode != 0
    assert "libmyops has no sm_80 machine code" in r.stderr
