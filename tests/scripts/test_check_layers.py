"""scripts/check_layers.py: the server's layer rules hold on the real tree, and the
check fails on each kind of violation (on a copy of the tree with one include added)."""

import pathlib
import shutil
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "check_layers.py"
SRC = REPO / "server" / "src"


def run(root):
    return subprocess.run([sys.executable, str(SCRIPT), str(root)], capture_output=True,
                          text=True, check=False)


def test_the_server_keeps_its_layers():
    result = run(SRC)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    "file, include, expected",
    [
        # A front end including another.
        ("frontends/oip/codec.cc", '"frontends/myops_v1/codec.h"',
         "frontends/oip may not include frontends/myops_v1/codec.h"),
        # The pipeline reaching up into a front end, or seeing protobuf or torch.
        ("pipeline/pipeline.cc", '"frontends/grpc/status.h"', "pipeline may not include"),
        ("pipeline/pipeline.h", '"myops/v1/myops.pb.h"', "may not include protobuf/gRPC"),
        ("pipeline/pipeline.cc", "<ATen/core/Tensor.h>", "may not include torch"),
        # The runtime's headers stay torch-free; its torch side stays private.
        ("runtime/executor.h", "<c10/core/Device.h>", "may not include torch"),
        ("frontends/myops_v1/service.cc", '"runtime/torch/runner.h"',
         "may not include runtime/torch/runner.h"),
        ("runtime/op_registry.cc", "<grpcpp/grpcpp.h>", "may not include protobuf/gRPC"),
        # REST and gRPC bindings of the OIP share only frontends/oip.
        ("frontends/oip/rest/service.cc", '"frontends/oip/grpc/service.h"',
         "frontends/oip/rest may not include"),
        ("shm/region_io.cc", "<civetweb.h>", "may not include civetweb"),
    ],
)
def test_a_forbidden_include_fails(tmp_path, file, include, expected):
    root = tmp_path / "src"
    shutil.copytree(SRC, root)
    target = root / file
    target.write_text(target.read_text() + f"\n#include {include}\n")
    result = run(root)
    assert result.returncode == 1
    assert expected in result.stdout, result.stdout
    assert len(result.stdout.strip().splitlines()) == 1, result.stdout
