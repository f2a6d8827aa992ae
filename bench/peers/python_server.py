"""The myops.v1 server a Python user would write in an afternoon: grpcio + numpy.

It implements the same service as myops-server (ScaleShift, ScaleShiftStream,
ServerInfo) so that myops-loadtest can measure both the same way. Stubs are generated
from proto/myops/v1/myops.proto at start-up (grpcio-tools). bfloat16 needs ml_dtypes.

    python bench/peers/python_server.py --address 127.0.0.1:0 [--workers 16]

Prints "python_server listening on HOST:PORT" once serving; SIGTERM/SIGINT stop it.
"""

import argparse
import concurrent.futures
import importlib
import pathlib
import signal
import sys
import tempfile
import threading
import time

import grpc
import numpy as np
from grpc_tools import protoc

REPO = pathlib.Path(__file__).resolve().parents[2]


def load_stubs():
    out = tempfile.mkdtemp(prefix="myops_peer_")
    args = ["protoc", f"-I{REPO / 'proto'}", f"--python_out={out}", f"--grpc_python_out={out}",
            "myops/v1/myops.proto"]
    if protoc.main(args) != 0:
        raise RuntimeError("grpc_tools.protoc failed")
    sys.path.insert(0, out)
    return importlib.import_module("myops.v1.myops_pb2"), importlib.import_module("myops.v1.myops_pb2_grpc")


pb2, pb2_grpc = load_stubs()

DTYPES = {pb2.DTYPE_FLOAT32: np.float32, pb2.DTYPE_FLOAT64: np.float64, pb2.DTYPE_FLOAT16: np.float16}
try:
    import ml_dtypes

    DTYPES[pb2.DTYPE_BFLOAT16] = ml_dtypes.bfloat16
except ImportError:
    pass


class Myops(pb2_grpc.MyopsServicer):
    def _compute(self, request):
        t0 = time.perf_counter_ns()
        t = request.input
        dtype = DTYPES.get(t.dtype)
        if dtype is None:
            raise ValueError(f"unsupported dtype {t.dtype}")
        x = np.frombuffer(t.data, dtype=dtype).reshape(tuple(t.shape))
        t1 = time.perf_counter_ns()
        y = (request.alpha * x.astype(np.float32 if x.itemsize < 4 else x.dtype) + request.beta).astype(dtype)
        t2 = time.perf_counter_ns()
        out = pb2.Tensor(dtype=t.dtype, shape=t.shape, data=y.tobytes())
        t3 = time.perf_counter_ns()
        timing = pb2.Timing(decode_ns=t1 - t0, compute_ns=t2 - t1, encode_ns=t3 - t2, total_ns=t3 - t0, device="cpu")
        return pb2.ScaleShiftResponse(output=out, timing=timing, request_id=request.request_id)

    def ScaleShift(self, request, context):
        try:
            return self._compute(request)
        except ValueError as e:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(e))

    def ScaleShiftStream(self, request_iterator, context):
        for request in request_iterator:
            try:
                yield pb2.ScaleShiftStreamResponse(request_id=request.request_id, response=self._compute(request))
            except ValueError as e:
                yield pb2.ScaleShiftStreamResponse(
                    request_id=request.request_id,
                    error=pb2.Error(code=grpc.StatusCode.INVALID_ARGUMENT.value[0], message=str(e)))

    def ServerInfo(self, request, context):
        return pb2.ServerInfoResponse(myops_version="python-peer", devices=[pb2.Device(name="cpu")],
                                      operators=[pb2.Operator(name="myops::scale_shift")])


def main():
    p = argparse.ArgumentParser(description="grpcio + numpy peer of myops-server")
    p.add_argument("--address", default="127.0.0.1:50053")
    p.add_argument("--workers", type=int, default=16)
    p.add_argument("--max-message-bytes", type=int, default=1 << 30)
    args = p.parse_args()
    options = [("grpc.max_receive_message_length", args.max_message_bytes),
               ("grpc.max_send_message_length", args.max_message_bytes)]
    server = grpc.server(concurrent.futures.ThreadPoolExecutor(max_workers=args.workers), options=options)
    pb2_grpc.add_MyopsServicer_to_server(Myops(), server)
    port = server.add_insecure_port(args.address)
    server.start()
    host = args.address.rsplit(":", 1)[0]
    print(f"python_server listening on {host}:{port}", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stop.wait()
    server.stop(grace=5).wait()


if __name__ == "__main__":
    main()
