"""The threads that run gRPC's callbacks (--grpc-threads, server/src/frontends/grpc/
callback_threads.h), on the real myops-server: exactly the configured count of
"grpc-callback" threads and none of gRPC's own "nexting_thread"s; and with one thread
every kind of call still completes side by side (ModelInfer inline and on the executor,
ModelStreamInfer, health, reflection on its synchronous queue, an unknown method), then
the server stops cleanly."""

from __future__ import annotations

import os
import signal
from concurrent.futures import ThreadPoolExecutor

import grpc
import numpy as np
import pytest

import tritonclient.grpc as grpcclient
from tritonclient.grpc import service_pb2, service_pb2_grpc

from myops_testing import quick_server

SCALE_SHIFT = "myops::scale_shift"


def thread_names(pid: int) -> list[str]:
    names = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/comm") as f:
            names.append(f.read().strip())
    return names


@pytest.mark.parametrize("threads", [1, 3])
def test_the_configured_threads_run_the_callbacks(threads):
    server = quick_server("--grpc-threads", str(threads))
    try:
        assert f"grpc threads: {threads} " in server.log()
        client = grpcclient.InferenceServerClient(server.address)
        assert client.is_server_ready()  # a callback ran
        names = thread_names(server.pid)
        assert names.count("grpc-callback") == threads, names
        assert "nexting_thread" not in names, names
        client.close()
    finally:
        server.stop()


def infer(address: str, n: int) -> None:
    client = grpcclient.InferenceServerClient(address)
    try:
        x = np.arange(n, dtype=np.float32)
        t = grpcclient.InferInput("x", [n], "FP32")
        t.set_data_from_numpy(x)
        params = {"alpha": 2.0, "beta": 1.0}
        for _ in range(5):
            out = client.infer(SCALE_SHIFT, [t], parameters=params).as_numpy("output__0")
            np.testing.assert_array_equal(out, x * 2 + 1)
    finally:
        client.close()


def reflect(address: str) -> list[str]:
    # ServerReflectionRequest {list_services = 7: ""}; the reply names every service.
    with grpc.insecure_channel(address) as channel:
        call = channel.stream_stream(
            "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo")
        return [r.decode("latin-1") for r in call(iter([b"\x3a\x00"]), timeout=30)]


def test_one_thread_serves_every_kind_of_call_at_once():
    # 64 KiB of input computes on the executor's workers with --inline-max-bytes 1024, 1 KiB
    # on the gRPC thread itself.
    server = quick_server("--grpc-threads", "1", "--inline-max-bytes", "1024")
    try:
        address = server.address
        with ThreadPoolExecutor(16) as pool:
            infers = [pool.submit(infer, address, n) for n in (256, 16384) * 6]
            reflections = [pool.submit(reflect, address) for _ in range(2)]
            with grpc.insecure_channel(address) as channel:
                stub = service_pb2_grpc.GRPCInferenceServiceStub(channel)
                request = service_pb2.ModelInferRequest(model_name=SCALE_SHIFT, id="s")
                request.inputs.add(name="x", datatype="FP32", shape=[4])
                request.raw_input_contents.append(np.ones(4, np.float32).tobytes())
                request.parameters["alpha"].double_param = 3.0
                request.parameters["beta"].double_param = 0.5
                streamed = list(stub.ModelStreamInfer(iter([request] * 8), timeout=30))
                assert [r.error_message for r in streamed] == [""] * 8
                assert {r.infer_response.id for r in streamed} == {"s"}
                out = np.frombuffer(streamed[0].infer_response.raw_output_contents[0], np.float32)
                np.testing.assert_array_equal(out, np.full(4, 3.5, np.float32))
                health = channel.unary_unary("/grpc.health.v1.Health/Check")(b"", timeout=30)
                assert health == b"\x08\x01"  # status: SERVING
                with pytest.raises(grpc.RpcError) as unknown:
                    channel.unary_unary("/no.such.Service/Method")(b"", timeout=30)
                assert unknown.value.code() == grpc.StatusCode.UNIMPLEMENTED
            for f in infers:
                f.result(timeout=60)
            for f in reflections:
                assert any("inference.GRPCInferenceService" in r for r in f.result(timeout=60))
        server.process.send_signal(signal.SIGTERM)
        assert server.process.wait(timeout=30) == 0, server.log()
    finally:
        server.stop()
