"""The myops Triton backend (backends/triton) in the real Triton server: a model repository
serving myops, torchvision and aten operators through libtriton_myops.so, started once per
module with myops_testing.triton.TritonProcess. Skipped where the nvidia-pytriton wheel
(its tritonserver) is not installed."""

from __future__ import annotations

import contextlib
import os
import pathlib
import textwrap

import pytest

from myops_testing import BUILD
from myops_testing.triton import TRITONSERVER, TritonProcess, backend_directory

BACKEND = BUILD / "backends" / "triton" / "myops" / "libtriton_myops.so"


def torchvision_library() -> pathlib.Path:
    import torchvision

    return pathlib.Path(torchvision.__file__).parent / "_C.so"


# Model name -> config.pbtxt. A config names the backend and the op; what it leaves out
# the backend completes from the op's schema (auto-complete). Multi-dimensional inputs
# are listed with their datatype and dims: Triton checks a request's against them.
def model_configs() -> dict[str, str]:
    tv = torchvision_library()
    return {
        "scale_shift": """
            backend: "myops"
            parameters { key: "op" value { string_value: "myops::scale_shift" } }
        """,
        # Triton waits up to 300 ms to fill a batch: under any machine load, several of 32
        # clients' requests then run together.
        "scale_shift_batched": """
            backend: "myops"
            max_batch_size: 64
            dynamic_batching { max_queue_delay_microseconds: 300000 }
            instance_group [ { kind: KIND_CPU count: 1 } ]
            parameters { key: "op" value { string_value: "myops::scale_shift" } }
        """,
        # The datatypes scale_shift computes, one model each (Triton checks a request's
        # datatypes against the configuration; myops-server's model takes any).
        **{f"scale_shift_{t.lower()}": f"""
            backend: "myops"
            parameters {{ key: "op" value {{ string_value: "myops::scale_shift" }} }}
            input [ {{ name: "x" data_type: TYPE_{t} dims: [ -1 ] }} ]
            output [ {{ name: "output__0" data_type: TYPE_{t} dims: [ -1 ] }} ]
        """ for t in ("FP64", "FP16", "INT32")},
        "nms": f"""
            backend: "myops"
            parameters {{ key: "op" value {{ string_value: "torchvision::nms" }} }}
            parameters {{ key: "libraries" value {{ string_value: "{tv}" }} }}
            input [ {{ name: "dets" data_type: TYPE_FP32 dims: [ -1, 4 ] }} ]
            output [ {{ name: "output__0" data_type: TYPE_INT64 dims: [ -1 ] }} ]
        """,
        "roi_align": f"""
            backend: "myops"
            parameters {{ key: "op" value {{ string_value: "torchvision::roi_align" }} }}
            parameters {{ key: "libraries" value {{ string_value: "{tv}" }} }}
            input [ {{ name: "input" data_type: TYPE_FP32 dims: [ -1, -1, -1, -1 ] }},
                    {{ name: "rois" data_type: TYPE_FP32 dims: [ -1, 5 ] }} ]
            output [ {{ name: "output__0" data_type: TYPE_FP32 dims: [ -1, -1, -1, -1 ] }} ]
        """,
        "topk": """
            backend: "myops"
            parameters { key: "op" value { string_value: "aten::topk" } }
            input [ { name: "self" data_type: TYPE_FP32 dims: [ -1, -1 ] } ]
        """,
        "unknown_op": """
            backend: "myops"
            parameters { key: "op" value { string_value: "myops::no_such_op" } }
        """,
        "bad_library": """
            backend: "myops"
            parameters { key: "op" value { string_value: "mylib::op" } }
            parameters { key: "libraries" value { string_value: "/nonexistent/libmylib.so" } }
        """,
    }


def infer_through_shared_memory(module, client, model: str, x, alpha: float, beta: float):
    """scale_shift of `x` with its input and output in one system shared memory region
    (tritonclient's shared_memory utilities, the client's `module`): the output read back
    from the region."""
    import tritonclient.utils.shared_memory as shm

    name, key = "myops_in_out", f"/myops_triton_{os.getpid()}_{id(client)}"
    handle = shm.create_shared_memory_region(name, key, 2 * x.nbytes)
    try:
        shm.set_shared_memory_region(handle, [x])
        client.register_system_shared_memory(name, key, 2 * x.nbytes)
        inp = module.InferInput("x", [x.size], "FP32")
        inp.set_shared_memory(name, x.nbytes)
        out = module.InferRequestedOutput("output__0")
        out.set_shared_memory(name, x.nbytes, offset=x.nbytes)
        client.infer(model, [inp], outputs=[out], parameters={"alpha": alpha, "beta": beta})
        got = shm.get_contents_as_numpy(handle, x.dtype, [x.size], offset=x.nbytes).copy()
        client.unregister_system_shared_memory(name)
        return got
    finally:
        shm.destroy_shared_memory_region(handle)


def write_repository(root: pathlib.Path, configs: dict[str, str]) -> pathlib.Path:
    for name, config in configs.items():
        (root / name / "1").mkdir(parents=True)
        (root / name / "config.pbtxt").write_text(textwrap.dedent(config).strip() + "\n")
    return root


@contextlib.contextmanager
def running_triton(tmp: pathlib.Path, configs: dict[str, str], wait_ready: bool = True):
    """Triton with the myops backend serving a repository of `configs` (under `tmp`),
    stopped on exit; skips the test where tritonserver is not installed."""
    if TRITONSERVER is None:
        pytest.skip("tritonserver is not installed (scripts/bootstrap.sh installs nvidia-pytriton)")
    assert BACKEND.exists(), f"{BACKEND} is not built"
    models = write_repository(tmp / "models", configs)
    backends = backend_directory(tmp / "backends", {"myops": BACKEND})
    process = TritonProcess(models, backends, log_path=tmp / "triton.log")
    process.start(wait_ready=wait_ready)
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture(scope="module")
def triton(tmp_path_factory):
    # Two models fail to load on purpose: Triton keeps serving the others.
    with running_triton(tmp_path_factory.mktemp("triton"), model_configs(),
                        wait_ready=False) as process:
        yield process
