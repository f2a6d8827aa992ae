"""grpcio stubs of myops.v1 for the tests that speak it without the client (generated from
proto/ at first use, as bench/peers does)."""

from __future__ import annotations

import importlib
import pathlib
import shutil
import sys
import tempfile

from myops_testing.paths import REPO


def load_stubs():
    """myops.v1 protobuf and gRPC modules, generated into a temporary directory. The
    proto is copied under the Python package name `myops_fault_v1` (the protobuf package
    stays myops.v1): `myops` is taken by the operator package on sys.path."""
    from grpc_tools import protoc  # Only the child processes need grpcio.
    if "myops_fault_v1.myops_pb2" in sys.modules:
        return sys.modules["myops_fault_v1.myops_pb2"], sys.modules["myops_fault_v1.myops_pb2_grpc"]
    out = pathlib.Path(tempfile.mkdtemp(prefix="myops_fault_stubs_"))
    (out / "myops_fault_v1").mkdir()
    shutil.copy(REPO / "proto" / "myops" / "v1" / "myops.proto", out / "myops_fault_v1")
    args = ["protoc", f"-I{out}", f"--python_out={out}", f"--grpc_python_out={out}",
            "myops_fault_v1/myops.proto"]
    if protoc.main(args) != 0:
        raise RuntimeError("grpc_tools.protoc failed")
    sys.path.insert(0, str(out))
    return (importlib.import_module("myops_fault_v1.myops_pb2"),
            importlib.import_module("myops_fault_v1.myops_pb2_grpc"))
