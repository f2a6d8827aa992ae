"""Fixtures of the exported-program suite: the example program of
scripts/export_program.py exported and packaged with AOTInductor once per session (CPU,
~20 s), a real myops-server serving it with --program (torchvision's operators loaded
with --load-library), and its clients: tritonclient gRPC and HTTP, and myops_client."""

from __future__ import annotations

import importlib.util
import pathlib
import sys

import pytest

from myops_testing import BUILD, REPO, ServerProcess

sys.path.insert(0, str(BUILD / "python"))  # the build's `myops` package (libmyops, export)


def torchvision_library() -> pathlib.Path:
    import torchvision
    return pathlib.Path(torchvision.__file__).parent / "_C.so"


@pytest.fixture(scope="session")
def example():
    """scripts/export_program.py as a module: the model, its inputs, export()."""
    spec = importlib.util.spec_from_file_location("export_program",
                                                  REPO / "scripts" / "export_program.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def package(example, tmp_path_factory) -> pathlib.Path:
    path = tmp_path_factory.mktemp("programs") / "detector.pt2"
    example.export(str(path), "cpu", max_batch=64)
    return path


@pytest.fixture(scope="session")
def program_server(package):
    server = ServerProcess("--load-library", str(torchvision_library()),
                           "--program", f"detector={package}", "--http-address", "127.0.0.1:0")
    yield server
    server.close()


@pytest.fixture(scope="session")
def triton_grpc(program_server):
    import tritonclient.grpc as grpcclient
    c = grpcclient.InferenceServerClient(program_server.address)
    yield c
    c.close()


@pytest.fixture(scope="session")
def triton_http(program_server):
    import tritonclient.http as httpclient
    c = httpclient.InferenceServerClient(program_server.http_address)
    yield c
    c.close()


@pytest.fixture(scope="session")
def client(program_server):
    import myops_client
    c = myops_client.Client(program_server.address)
    yield c
    c.close()
