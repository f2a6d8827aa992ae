"""The soak's traffic that myops-loadtest does not make: malformed requests, expired
deadlines and cancellations (unary and mid-stream), interleaved with checked
well-formed calls. Runs until --until (a Unix time) and writes a JSON summary:

    {"counts": {kind: {code: n}}, "unexpected": [...first 50...], "unexpected_total": n}

Each kind has the codes it may end with (EXPECTED); anything else is unexpected.
Uses grpcio with stubs generated from proto/ at start (as bench/peers does).
"""

import argparse
import collections
import importlib
import json
import pathlib
import random
import shutil
import sys
import tempfile
import time

import grpc
import numpy as np
from grpc_tools import protoc

REPO = pathlib.Path(__file__).resolve().parents[2]
C = grpc.StatusCode
EXPECTED = {
    "ok": {C.OK, C.RESOURCE_EXHAUSTED},  # Well-formed: served, or refused for capacity.
    "no_input": {C.INVALID_ARGUMENT, C.RESOURCE_EXHAUSTED},
    "unknown_dtype": {C.INVALID_ARGUMENT, C.RESOURCE_EXHAUSTED},
    "short_data": {C.INVALID_ARGUMENT, C.RESOURCE_EXHAUSTED},
    "negative_dim": {C.INVALID_ARGUMENT, C.RESOURCE_EXHAUSTED},
    "bad_device": {C.INVALID_ARGUMENT, C.RESOURCE_EXHAUSTED},
    "absent_gpu": {C.FAILED_PRECONDITION, C.RESOURCE_EXHAUSTED},
    "expired_deadline": {C.DEADLINE_EXCEEDED},
    "tight_deadline": {C.OK, C.DEADLINE_EXCEEDED, C.RESOURCE_EXHAUSTED},
    "cancelled_unary": {C.CANCELLED, C.OK, C.RESOURCE_EXHAUSTED},
    "cancelled_stream": {C.CANCELLED, C.RESOURCE_EXHAUSTED},
    "stream_bad_item": {C.OK, C.RESOURCE_EXHAUSTED},
}


def load_stubs():
    out = pathlib.Path(tempfile.mkdtemp(prefix="myops_soak_"))
    (out / "myops_soak_v1").mkdir()  # Not "myops": that is the operator package's name.
    shutil.copy(REPO / "proto" / "myops" / "v1" / "myops.proto", out / "myops_soak_v1")
    if protoc.main(["protoc", f"-I{out}", f"--python_out={out}", f"--grpc_python_out={out}",
                    "myops_soak_v1/myops.proto"]) != 0:
        raise RuntimeError("grpc_tools.protoc failed")
    sys.path.insert(0, str(out))
    return (importlib.import_module("myops_soak_v1.myops_pb2"),
            importlib.import_module("myops_soak_v1.myops_pb2_grpc"))


pb2, pb2_grpc = load_stubs()


def tensor(x: np.ndarray, **overrides):
    t = pb2.Tensor(dtype=pb2.DTYPE_FLOAT32, shape=list(x.shape), data=x.tobytes())
    for k, v in overrides.items():
        if k == "shape":
            del t.shape[:]
            t.shape.extend(v)
        else:
            setattr(t, k, v)
    return t


class Driver:
    def __init__(self, target: str, seed: int) -> None:
        limit = 1 << 30
        self.channel = grpc.insecure_channel(target, options=[
            ("grpc.max_send_message_length", limit), ("grpc.max_receive_message_length", limit)])
        self.stub = pb2_grpc.MyopsStub(self.channel)
        self.rng = random.Random(seed)
        self.counts = collections.defaultdict(collections.Counter)
        self.unexpected: list[dict] = []
        self.unexpected_total = 0

    def record(self, kind: str, code: grpc.StatusCode, details: str = "") -> None:
        self.counts[kind][code.name] += 1
        if code not in EXPECTED[kind]:
            self.unexpected_total += 1
            if len(self.unexpected) < 50:
                self.unexpected.append({"kind": kind, "code": code.name, "details": details})

    def unary(self, kind: str, request, timeout: float = 120.0, x=None) -> None:
        try:
            response = self.stub.ScaleShift(request, timeout=timeout)
        except grpc.RpcError as e:
            return self.record(kind, e.code(), e.details() or "")
        if x is not None:
            y = np.frombuffer(response.output.data, dtype=np.float32)
            if not np.array_equal(y, x.ravel() * np.float32(2) + np.float32(1)):
                return self.record(kind, C.DATA_LOSS, "wrong values")
        self.record(kind, C.OK)

    def x(self, nbytes: int) -> np.ndarray:
        return np.random.default_rng(self.rng.randrange(1 << 30)).standard_normal(
            max(1, nbytes // 4), dtype=np.float32)

    def step(self) -> None:
        x = self.x(self.rng.choice([1 << 10, 64 << 10, 1 << 20, 4 << 20]))
        good = pb2.ScaleShiftRequest(input=tensor(x), alpha=2.0, beta=1.0)
        choice = self.rng.randrange(12)
        if choice <= 2:
            self.unary("ok", good, x=x)
        elif choice == 3:
            self.unary("no_input", pb2.ScaleShiftRequest(alpha=1.0))
            self.unary("unknown_dtype", pb2.ScaleShiftRequest(input=tensor(x, dtype=42)))
        elif choice == 4:
            self.unary("short_data", pb2.ScaleShiftRequest(input=tensor(x, data=b"abc")))
            self.unary("negative_dim", pb2.ScaleShiftRequest(input=tensor(x, shape=[-1, 4])))
        elif choice == 5:
            self.unary("bad_device", pb2.ScaleShiftRequest(input=tensor(x), device="gpu"))
            self.unary("absent_gpu", pb2.ScaleShiftRequest(input=tensor(x), device="cuda:3"))
        elif choice == 6:
            big = self.x(16 << 20)
            self.unary("expired_deadline", pb2.ScaleShiftRequest(input=tensor(big)),
                       timeout=0.0005)
        elif choice == 7:
            self.unary("tight_deadline", good, timeout=self.rng.choice([0.005, 0.02, 0.1]))
        elif choice == 8:
            big = self.x(self.rng.choice([16 << 20, 64 << 20]))
            future = self.stub.ScaleShift.future(pb2.ScaleShiftRequest(input=tensor(big)),
                                                 timeout=120)
            time.sleep(self.rng.random() * 0.05)
            future.cancel()
            try:
                future.result()
                self.record("cancelled_unary", C.OK)
            except grpc.FutureCancelledError:
                self.record("cancelled_unary", C.CANCELLED)
            except grpc.RpcError as e:
                self.record("cancelled_unary", e.code(), e.details() or "")
        elif choice == 9:
            self.cancelled_stream()
        else:
            self.stream_with_bad_item()

    def cancelled_stream(self) -> None:
        requests = [pb2.ScaleShiftRequest(input=tensor(self.x(1 << 20)), request_id=i)
                    for i in range(16)]
        call = self.stub.ScaleShiftStream(iter(requests), timeout=120)
        try:
            for i, _ in enumerate(call):
                if i == 1:
                    call.cancel()
            self.record("cancelled_stream", C.OK)
        except grpc.RpcError as e:
            self.record("cancelled_stream", e.code(), e.details() or "")

    def stream_with_bad_item(self) -> None:
        xs = [self.x(64 << 10) for _ in range(6)]
        requests = [pb2.ScaleShiftRequest(input=tensor(x), alpha=2.0, beta=1.0, request_id=i)
                    for i, x in enumerate(xs)]
        requests[3].input.data = b"short"
        try:
            responses = {r.request_id: r for r in self.stub.ScaleShiftStream(iter(requests),
                                                                          timeout=120)}
        except grpc.RpcError as e:
            return self.record("stream_bad_item", e.code(), e.details() or "")
        for i, x in enumerate(xs):
            r = responses.get(i)
            if r is None:
                return self.record("stream_bad_item", C.DATA_LOSS, f"no answer to {i}")
            if r.WhichOneof("result") == "error":
                code = C.INVALID_ARGUMENT if i == 3 else None
                if r.error.code == C.RESOURCE_EXHAUSTED.value[0]:
                    continue
                if code is None or r.error.code != code.value[0]:
                    return self.record("stream_bad_item", C.UNKNOWN, r.error.message)
            elif i == 3:
                return self.record("stream_bad_item", C.UNKNOWN, "the malformed item was served")
            elif not np.array_equal(np.frombuffer(r.response.output.data, np.float32),
                                    x * np.float32(2) + np.float32(1)):
                return self.record("stream_bad_item", C.DATA_LOSS, "wrong values")
        self.record("stream_bad_item", C.OK)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--target", required=True)
    p.add_argument("--until", type=float, required=True, help="Unix time to stop at")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", required=True)
    args = p.parse_args()
    d = Driver(args.target, args.seed)
    while time.time() < args.until:
        d.step()
    d.channel.close()
    summary = {"counts": {k: dict(v) for k, v in d.counts.items()},
               "unexpected": d.unexpected, "unexpected_total": d.unexpected_total}
    pathlib.Path(args.json).write_text(json.dumps(summary, indent=1))
    print(f"driver {args.seed}: {sum(sum(v.values()) for v in d.counts.values())} calls, "
          f"{d.unexpected_total} unexpected", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
