"""What the Python tests share: the repository's paths, free ports, polling, the one
launcher of real server processes (ServerProcess) and the one launcher of the real NVIDIA
Triton server (TritonProcess; TRITONSERVER is None where nvidia-pytriton is missing).
Importable from every test (pytest.ini puts tests/python on the path). Nothing here
asserts on time: poll() waits for a condition with a generous limit and returns whether
it held."""

from myops_testing.paths import BUILD, ECHO_SERVER, REPO, SERVER
from myops_testing.ports import free_port, poll
from myops_testing.server import ServerProcess, quick_server
from myops_testing.triton import TRITONSERVER, TritonError, TritonProcess, backend_directory

__all__ = ["BUILD", "ECHO_SERVER", "REPO", "SERVER", "TRITONSERVER", "ServerProcess", "TritonError",
           "TritonProcess", "backend_directory", "free_port", "poll", "quick_server"]
