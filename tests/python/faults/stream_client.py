"""A streaming client process for the fault tests (grpcio, which must not share a
process with myops_client: see test_faults.py).

    python stream_client.py ADDRESS STREAMS [--wait]

Opens STREAMS bidirectional streams and sends two requests on each; once every stream
has its two answers it prints "streaming". With --wait it then waits for a line on
stdin before sending two more requests per stream. Each stream then half-closes. Every
answer is checked against the operator; prints "ok N" (N answers) and exits 0, or
prints what went wrong and exits 1.
"""

import queue
import sys
import threading

import grpc
import numpy as np

from myops_testing.stubs import load_stubs

from fault_helpers import expected

pb2, pb2_grpc = load_stubs()


class Stream(threading.Thread):
    def __init__(self, stub, index: int) -> None:
        super().__init__()
        self.stub, self.index = stub, index
        self.requests: queue.Queue = queue.Queue()
        self.sent: dict[int, np.ndarray] = {}
        self.received: dict[int, object] = {}
        self.error = None
        self.answered = threading.Semaphore(0)

    def send(self, k: int) -> None:
        request_id = 100 * self.index + k
        x = np.random.default_rng(request_id).standard_normal(50_000, dtype=np.float32)
        self.sent[request_id] = x
        self.requests.put(pb2.ScaleShiftRequest(
            input=pb2.Tensor(dtype=pb2.DTYPE_FLOAT32, shape=[x.size], data=x.tobytes()),
            alpha=2.0, beta=1.0, request_id=request_id))

    def run(self) -> None:
        try:
            for response in self.stub.ScaleShiftStream(iter(self.requests.get, None), timeout=600):
                self.received[response.request_id] = response
                self.answered.release()
        except grpc.RpcError as e:
            self.error = e
        self.answered.release()  # Wake a waiter if the stream ended early.

    def problems(self) -> list[str]:
        if self.error is not None:
            return [f"stream {self.index}: {self.error.code()} {self.error.details()}"]
        if sorted(self.received) != sorted(self.sent):
            return [f"stream {self.index}: answers {sorted(self.received)} for {sorted(self.sent)}"]
        out = []
        for request_id, r in self.received.items():
            if r.WhichOneof("result") != "response":
                out.append(f"request {request_id}: {r.error.code} {r.error.message}")
                continue
            y = np.frombuffer(r.response.output.data, dtype=np.float32)
            if not np.array_equal(y, expected(self.sent[request_id])):
                out.append(f"request {request_id}: wrong values")
        return out


def main() -> int:
    address, count, wait = sys.argv[1], int(sys.argv[2]), "--wait" in sys.argv
    with grpc.insecure_channel(address) as channel:
        stub = pb2_grpc.MyopsStub(channel)
        streams = [Stream(stub, i) for i in range(count)]
        for s in streams:
            s.start()
            s.send(0)
            s.send(1)
        for s in streams:
            s.answered.acquire()
            s.answered.acquire()
        print("streaming", flush=True)
        if wait:
            sys.stdin.readline()
        for s in streams:
            s.send(2)
            s.send(3)
            s.requests.put(None)
        for s in streams:
            s.join()
        problems = [p for s in streams for p in s.problems()]
    if problems:
        print("\n".join(problems), flush=True)
        return 1
    print(f"ok {sum(len(s.received) for s in streams)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
