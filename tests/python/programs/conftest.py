"""Fixtures of the exported-program suite: the example program of
scripts/export_program.py exported and packaged with AOTInductor once per test process
(CPU, ~20 s; myops_testing.programs), a real myops-server serving it with --program
(torchvision's operators loaded with --load-library), and its clients: tritonclient gRPC
and HTTP, and myops_client."""

from __future__ import annotations

import pathlib

import pytest

from myops_testing import ServerProcess
from myops_testing.programs import example_package, example_program


def torchvision_library() -> pathlib.Path:
    import torchvision
    return pathlib.Path(torchvision.__file__).parent / "_C.so"


@pytest.fixture(scope="session")
def example():
    """scripts/export_program.py as a module: the model, its inputs, export()."""
    return example_program()


@pytest.fixture(scope="session")
def package() -> pathlib.Path:
    return pathlib.Path(example_package())


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
