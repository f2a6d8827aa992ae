"""Slow and hostile HTTP clients against the REST port (--http-address): request heads
trickled a byte at a time, many connections from one address, responses read a few
bytes at a time, bodies sent a few bytes at a time. A thread-per-connection server lets
~100 half-sent heads occupy every worker and its queue, after which /v2/health/ready and
every well-behaved client go unanswered; a server that keeps writing while each write
makes some progress keeps a slow reader's response (and its memory) for hours.

What the port must do: heads are read by the event loop and must arrive whole within
--stall-timeout-ms of their first byte; health is answered by the event loop itself;
connections from one address beyond --http-max-connections-per-address are answered
503 and closed; a response being written and a body being read must move 16 KiB (or
all that is left) per --stall-timeout-ms, else the connection is cut and the memory the
request held returns to the budget; an idle keep-alive connection is closed after 5 s.

Attackers connect from 127.0.0.1, well-behaved clients from 127.0.0.2 (Linux routes all
of 127/8 to loopback), so the per-address cap hits only the attackers. Every wait is
bounded: a server that hangs fails the test rather than blocking it."""

from __future__ import annotations

import http.client
import json
import re
import select
import socket
import struct
import threading
import time
from typing import Any

import pytest

from myops_testing import ServerProcess, poll

SCALE_SHIFT = "myops::scale_shift"
INFER_PATH = f"/v2/models/{SCALE_SHIFT}/infer"
ATTACKER = "127.0.0.1"
WELL_BEHAVED = "127.0.0.2"
HALF_HEAD = f"POST {INFER_PATH} HTTP/1.1\r\nHost: x\r\nX-Trickle: ".encode()
MiB = 1 << 20


@pytest.fixture
def serve():
    """Starts servers with the REST port on a free loopback port and the given flags;
    kills them after the test."""
    servers = []

    def start(*flags: str) -> ServerProcess:
        servers.append(ServerProcess("--http-address", "127.0.0.1:0", *flags))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def connect(server: ServerProcess, source: str = ATTACKER, receive_buffer: int = 0,
            timeout: float = 10.0) -> socket.socket:
    """A raw connection to the REST port from `source` (SO_RCVBUF set before connecting
    when `receive_buffer` is given, so that it bounds the TCP window)."""
    host, port = server.http_address.rsplit(":", 1)
    sock = socket.socket()
    if receive_buffer:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    sock.bind((source, 0))
    sock.settimeout(timeout)
    sock.connect((host, int(port)))
    return sock


def infer_body(data: list[float]) -> bytes:
    return json.dumps({"inputs": [{"name": "x", "shape": [len(data)], "datatype": "FP32",
                                   "data": data}],
                       "parameters": {"alpha": 2.0, "beta": 1.0}}).encode()


def request(server: ServerProcess, method: str, path: str, body: bytes | None = None,
            timeout: float = 30.0) -> tuple[int, Any, float]:
    """(status, parsed JSON body, seconds taken) of one well-behaved request on its own
    connection from 127.0.0.2; fails the test when no answer comes within `timeout`."""
    host, port = server.http_address.rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port), timeout=timeout,
                                            source_address=(WELL_BEHAVED, 0))
    started = time.monotonic()
    try:
        connection.request(method, path, body,
                           {"Content-Type": "application/json"} if body is not None else {})
        response = connection.getresponse()
        return response.status, json.loads(response.read()), time.monotonic() - started
    except OSError as e:
        pytest.fail(f"{method} {path} from {WELL_BEHAVED}: no answer after "
                    f"{time.monotonic() - started:.2f} s ({e!r})")
    finally:
        connection.close()


def binary_infer(elements: int) -> bytes:
    """A scale_shift request of `elements` float32 zeros as binary data, its result asked
    for as binary data: 4 * elements bytes each way."""
    header = json.dumps({
        "inputs": [{"name": "x", "shape": [elements], "datatype": "FP32",
                    "parameters": {"binary_data_size": 4 * elements}}],
        "outputs": [{"name": "output__0", "parameters": {"binary_data": True}}],
        "parameters": {"alpha": 2.0, "beta": 1.0}}).encode()
    head = (f"POST {INFER_PATH} HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n"
            f"Inference-Header-Content-Length: {len(header)}\r\n"
            f"Content-Length: {len(header) + 4 * elements}\r\n\r\n").encode()
    return head + header + bytes(4 * elements)


def infers(server: ServerProcess, timeout: float = 30.0) -> float:
    """Seconds a well-behaved small inference took; fails the test on a wrong answer."""
    status, answer, took = request(server, "POST", INFER_PATH, infer_body([1, 2, 3, 4]), timeout)
    assert status == 200, answer
    assert answer["outputs"][0]["data"] == [3.0, 5.0, 7.0, 9.0]
    return took


def held(server: ServerProcess) -> float:
    return server.metrics()["myops_memory_held_bytes"]


def read_response(stream) -> tuple[int, bytes]:
    """(status, body) of the next response on a buffered reader of a connection."""
    status_line = stream.readline()
    assert status_line.startswith(b"HTTP/1.1 "), status_line
    length = 0
    while (line := stream.readline()) not in (b"\r\n", b"\n", b""):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    return int(status_line.split()[1]), stream.read(length)


def answer_until_closed(sock: socket.socket, request_bytes: bytes) -> bytes | None:
    """All the server sends in answer to `request_bytes` until it closes the connection
    (b"" for nothing), or None when it resets the connection. The socket's timeout
    bounds each wait."""
    answer = b""
    try:
        sock.sendall(request_bytes)
        while chunk := sock.recv(65536):
            answer += chunk
    except (ConnectionResetError, BrokenPipeError):
        return None
    return answer


def trickle_until_closed(sock: socket.socket, piece: bytes, interval: float, limit: float,
                         statuses: tuple[bytes, ...]) -> float | None:
    """Sends `piece` every `interval` seconds until the server closes the connection:
    the seconds from the call until the close was seen, or None when the connection was
    still open after `limit` seconds. The server may answer first with one of
    `statuses`; any other answer fails the test."""
    started, answer = time.monotonic(), b""
    while time.monotonic() - started < limit:
        try:
            sock.sendall(piece)
            readable, _, _ = select.select([sock], [], [], interval)
            if readable:
                chunk = sock.recv(65536)
                if chunk == b"":
                    return time.monotonic() - started
                answer += chunk
                assert any(answer.startswith(b"HTTP/1.1 " + s + b" ") for s in statuses), \
                    answer[:200]
        except (ConnectionResetError, BrokenPipeError):
            return time.monotonic() - started
    return None


def read_paced(sock: socket.socket, step: int, interval: float, seconds: float) -> bytes:
    """A whole response read `step` bytes every `interval` seconds for `seconds`, then as
    fast as it comes; fails the test when the server closes the connection before its end."""
    answer, started, end = b"", time.monotonic(), None
    while end is None or len(answer) < end:
        try:
            chunk = sock.recv(step if time.monotonic() - started < seconds else 1 << 20)
        except ConnectionResetError:
            chunk = b""
        if chunk == b"":
            pytest.fail(f"the connection was cut after {len(answer)} bytes of the response, "
                        f"{time.monotonic() - started:.1f} s into it")
        answer += chunk
        if end is None and b"\r\n\r\n" in answer:
            head = answer[:answer.index(b"\r\n\r\n") + 4]
            length = re.search(rb"(?i)\r\ncontent-length: *(\d+)", head)
            assert length, head
            end = len(head) + int(length.group(1))
        if time.monotonic() - started < seconds:
            time.sleep(interval)
    return answer


class Trickler:
    """A background thread that sends one byte to each of `socks` every `interval`
    seconds (sockets the server closed are left alone)."""

    def __init__(self, socks: list[socket.socket], interval: float) -> None:
        self.socks, self.interval, self._stop = socks, interval, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            for sock in self.socks:
                try:
                    sock.send(b"a")
                except OSError:
                    pass

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)


def test_half_sent_heads_do_not_stop_health(serve):
    server = serve("--stall-timeout-ms", "3000", "--http-max-connections-per-address", "0")
    attackers = []
    trickler = None
    try:
        for _ in range(150):
            attackers.append(connect(server))
            attackers[-1].sendall(HALF_HEAD)
        trickler = Trickler(attackers, 0.3)
        # While every head is half-sent (for 3 s after its first byte), health probes and
        # a well-behaved client's inference are answered at once.
        for _ in range(10):
            status, answer, took = request(server, "GET", "/v2/health/ready", timeout=1.0)
            assert status == 200 and answer == {"ready": True}
            assert took < 1.0, f"/v2/health/ready took {took:.2f} s beside 150 half-sent heads"
            time.sleep(0.2)
        took = infers(server, timeout=2.0)
        assert took < 2.0, f"an inference took {took:.2f} s beside 150 half-sent heads"
    finally:
        if trickler:
            trickler.stop()
        for sock in attackers:
            sock.close()


def test_a_trickled_head_is_cut_off_at_the_stall_timeout(serve):
    server = serve("--stall-timeout-ms", "1500")
    with connect(server) as sock:
        sock.sendall(HALF_HEAD)
        closed = trickle_until_closed(sock, b"a", 0.2, limit=6.0, statuses=(b"408",))
    # Bytes kept coming; the head was still cut 1.5 s after its first byte.
    assert closed is not None, "a head trickled a byte every 200 ms was still open after 6 s"
    assert closed < 1.5 + 1.5, f"a head trickled a byte every 200 ms was cut after {closed:.1f} s"
    infers(server)


def test_connections_per_address_are_bounded(serve):
    server = serve("--http-max-connections-per-address", "8")
    live = b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    attackers = [connect(server) for _ in range(8)]
    try:
        for sock in attackers:
            sock.sendall(HALF_HEAD)
        readable, _, _ = select.select(attackers, [], [], 0.3)
        assert readable == [], "a connection within the per-address bound was answered"
        # The 9th from the same address is refused; another address is served.
        with connect(server, timeout=5.0) as ninth:
            try:
                answer = answer_until_closed(ninth, live)
            except TimeoutError:
                pytest.fail("a 9th connection from 127.0.0.1 was neither answered nor closed")
        assert answer is None or answer == b"" or answer.startswith(b"HTTP/1.1 503 "), answer
        status, body, _ = request(server, "GET", "/v2/health/live")
        assert (status, body) == (200, {"live": True})
    finally:
        for sock in attackers:
            sock.close()

    # Once the 8 are gone, 127.0.0.1 is served again.
    def served() -> bool:
        with connect(server, timeout=5.0) as sock:
            answer = answer_until_closed(sock, live)
        return answer is not None and answer.startswith(b"HTTP/1.1 200 ")
    assert poll(served, 10)


def test_a_slow_reader_is_cut_off_and_its_memory_returns(serve):
    server = serve("--stall-timeout-ms", "1000")
    output = 16 * MiB
    received, peak, cut = 0, 0.0, False
    with connect(server, receive_buffer=4096, timeout=30.0) as sock:
        sock.sendall(binary_infer(output // 4))
        # 1 KiB every 250 ms for 5 s: each of the server's writes moves a little (the
        # window opens every half second or so), a quarter of 16 KiB per stall timeout.
        started = time.monotonic()
        try:
            while time.monotonic() - started < 5.0:
                chunk = sock.recv(1024)
                if chunk == b"":
                    cut = True
                    break
                received += len(chunk)
                peak = max(peak, held(server))
                time.sleep(0.25)
            # Meanwhile a well-behaved client is served.
            infers(server)
            # Then read fast: a server that gave up has closed the connection after what
            # its socket buffer holds; one that did not sends the whole 16 MiB.
            sock.settimeout(10.0)
            while not cut and received < output:
                chunk = sock.recv(1 << 20)
                cut = chunk == b""
                received += len(chunk)
        except ConnectionResetError:
            cut = True
    assert cut and received < output, \
        f"the server sent all {received} bytes to a reader taking 4 KiB a second"
    # The response held its memory while it was written; that memory returns.
    assert peak > 0
    assert poll(lambda: held(server) == 0, 10), held(server)


def test_a_slow_body_is_cut_off_and_its_memory_returns(serve):
    server = serve("--stall-timeout-ms", "1000")
    head = (f"POST {INFER_PATH} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Content-Length: {8 * MiB}\r\n\r\n").encode()
    with connect(server) as sock:
        sock.sendall(head + b" " * 64)
        # The body's first step is reserved as it starts to arrive.
        assert poll(lambda: held(server) > 0, 5)
        closed = trickle_until_closed(sock, b" " * 64, 0.2, limit=6.0,
                                      statuses=(b"408", b"400"))
    assert closed is not None, "a body sent 64 bytes every 200 ms was still open after 6 s"
    assert closed < 1.0 + 2.0, f"a body sent 64 bytes every 200 ms was cut after {closed:.1f} s"
    assert poll(lambda: held(server) == 0, 10), held(server)
    infers(server)


def test_slow_clients_that_keep_up_are_served(serve):
    """The other side of the floor: a body sent and a response read 64 KiB every 100 ms
    (about 0.5 MiB a second, some 30 times 16 KiB per stall timeout) take several stall
    timeouts and are served whole."""
    server = serve("--stall-timeout-ms", "1000")
    piece = 64 << 10
    # A 2 MiB body in 64 KiB pieces every 100 ms: 3.2 s.
    elements = 512 << 10
    sent = binary_infer(elements)
    with connect(server, source=WELL_BEHAVED, timeout=30.0) as sock:
        for offset in range(0, len(sent), piece):
            try:
                sock.sendall(sent[offset:offset + piece])
            except (ConnectionResetError, BrokenPipeError):
                pytest.fail(f"a body sent at 640 KiB a second was cut after {offset} bytes")
            time.sleep(0.1)
        answer = read_paced(sock, piece, 0, 0)
    assert answer.startswith(b"HTTP/1.1 200 "), answer[:200]
    assert answer.endswith(struct.pack("<f", 1.0) * elements)
    # A 16 MiB response read 64 KiB every 100 ms for 2.5 s (the server's socket buffer
    # holds a few MiB), then fast.
    elements = 4 * MiB
    with connect(server, source=WELL_BEHAVED, receive_buffer=piece, timeout=30.0) as sock:
        sock.sendall(binary_infer(elements))
        answer = read_paced(sock, piece, 0.1, 2.5)
    assert answer.startswith(b"HTTP/1.1 200 "), answer[:200]
    assert answer.endswith(struct.pack("<f", 1.0) * elements)
    assert poll(lambda: held(server) == 0, 10), held(server)


def test_well_behaved_keep_alive_clients_are_served(serve):
    server = serve()
    host, port = server.http_address.rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port), timeout=30,
                                            source_address=(WELL_BEHAVED, 0))
    try:
        connection.request("GET", "/v2/health/ready")
        first = connection.getresponse()
        assert (first.status, json.loads(first.read())) == (200, {"ready": True})
        sock = connection.sock
        for i in range(30):
            connection.request("POST", INFER_PATH, infer_body([i, i + 1]),
                               {"Content-Type": "application/json"})
            response = connection.getresponse()
            assert response.status == 200
            assert json.loads(response.read())["outputs"][0]["data"] == [2 * i + 1, 2 * i + 3]
            connection.request("GET", "/v2/health/live")
            response = connection.getresponse()
            assert (response.status, json.loads(response.read())) == (200, {"live": True})
            assert connection.sock is sock, f"the connection was not kept alive after {i} calls"
    finally:
        connection.close()
    # Pipelined: an inference, then health (which the event loop could answer first),
    # sent at once, answered in order.
    body = infer_body([1, 2])
    pipelined = (f"POST {INFER_PATH} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 f"Content-Length: {len(body)}\r\n\r\n").encode() + body
    pipelined += b"GET /v2/health/ready HTTP/1.1\r\nHost: x\r\n\r\n"
    pipelined += b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    with connect(server, source=WELL_BEHAVED) as sock, sock.makefile("rb") as stream:
        sock.sendall(pipelined)
        status, answer = read_response(stream)
        assert status == 200 and json.loads(answer)["outputs"][0]["data"] == [3.0, 5.0]
        assert read_response(stream) == (200, b'{"ready":true}')
        assert read_response(stream) == (200, b'{"live":true}')
        assert stream.read() == b""


def test_an_idle_keep_alive_connection_is_closed(serve):
    server = serve()
    with connect(server, source=WELL_BEHAVED) as sock, sock.makefile("rb") as stream:
        sock.sendall(b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n")
        assert read_response(stream) == (200, b'{"live":true}')
        idle = time.monotonic()
        readable, _, _ = select.select([sock], [], [], 3.0)
        assert readable == [], "a keep-alive connection was closed after 3 s idle"
        try:
            assert stream.read() == b""
        except TimeoutError:
            pytest.fail("a keep-alive connection was still open after 10 s idle")
        took = time.monotonic() - idle
        assert took < 5.0 + 2.0, f"an idle keep-alive connection was closed after {took:.1f} s"
