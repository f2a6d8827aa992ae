"""A client process that the fault tests kill with SIGKILL in the middle of its work.

    python abrupt_client.py streams ADDRESS   # open streams, print "ready", wait forever
    python abrupt_client.py upload ADDRESS N  # print "sending", send an N-byte request

streams: one stream whose responses are read, one that sent eight 8 MiB requests and
reads nothing (their responses wait in the server), one that sent half of nothing (open,
no request). upload: one unary request of N bytes of float32; whether the kill lands
during the upload or after it is left to chance: both must leave nothing behind.
"""

import sys
import threading

import grpc
import numpy as np

from myops_testing.stubs import load_stubs

pb2, pb2_grpc = load_stubs()


def request(nbytes: int, request_id: int):
    data = np.ones(nbytes // 4, dtype=np.float32).tobytes()
    return pb2.ScaleShiftRequest(
        input=pb2.Tensor(dtype=pb2.DTYPE_FLOAT32, shape=[nbytes // 4], data=data),
        alpha=2.0, beta=1.0, request_id=request_id)


def requests_then_block(items):
    yield from items
    threading.Event().wait()  # The stream stays open until the process dies.


def main() -> None:
    mode, address = sys.argv[1], sys.argv[2]
    limit = 1 << 30
    channel = grpc.insecure_channel(address, options=[("grpc.max_send_message_length", limit),
                                                      ("grpc.max_receive_message_length", limit)])
    stub = pb2_grpc.MyopsStub(channel)
    if mode == "streams":
        read = stub.ScaleShiftStream(requests_then_block([request(1 << 20, 1)]))
        next(read)
        unread = stub.ScaleShiftStream(
            requests_then_block([request(8 << 20, i) for i in range(8)]))
        idle = stub.ScaleShiftStream(requests_then_block([]))
        print("ready", flush=True)
        threading.Event().wait()
        del unread, idle
    else:
        big = request(int(sys.argv[3]), 1)
        print("sending", flush=True)
        stub.ScaleShift(big, timeout=600)
        print("sent", flush=True)
        threading.Event().wait()


if __name__ == "__main__":
    main()
