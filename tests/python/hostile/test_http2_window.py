"""The HTTP/2 receive windows (--http2-window-bytes, server/src/frontends/grpc/http2_window.h),
seen on the wire by a raw HTTP/2 client of the real myops-server: the server announces
the configured window per stream (SETTINGS_INITIAL_WINDOW_SIZE) and per connection (a
WINDOW_UPDATE on stream 0), not gRPC's 64 KiB nor a window probed from the network. What
a client may send into a stream the server does not read is that window (HTTP/2 flow
control, which gRPC enforces); the memory it makes the server hold is the all-at-once
test's (test_all_at_once.py). A stream the server reads a message on is granted the rest
of the message at once when that rest is at most the largest message the server accepts
(--max-message-bytes), and gRPC's 1 MiB read-ahead when it is longer."""

from __future__ import annotations

import socket
import struct
import time

import pytest

from myops_testing import quick_server

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, SETTINGS, WINDOW_UPDATE = 0x0, 0x1, 0x4, 0x8
ACK, END_HEADERS = 0x1, 0x4
INITIAL_WINDOW_SIZE = 0x4
WINDOW = 3 << 20  # neither gRPC's default nor a power of two a probe would pick
MAX_MESSAGE = 64 << 20
GRPC_READ_AHEAD = 1 << 20  # gRPC 1.51's own grant beyond the window (kMaxWindowDelta)


def frame(kind: int, flags: int, stream: int, payload: bytes = b"") -> bytes:
    return struct.pack(">I", len(payload))[1:] + struct.pack(">BBI", kind, flags, stream) + payload


class Connection:
    """A raw HTTP/2 connection: sends frames, reads the server's frame by frame."""

    def __init__(self, address: str) -> None:
        host, port = address.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=10)
        self.buffer = b""
        self.sock.sendall(PREFACE + frame(SETTINGS, 0, 0))

    def read_frame(self) -> tuple[int, int, int, bytes]:
        while True:
            if len(self.buffer) >= 9:
                length = int.from_bytes(self.buffer[:3], "big")
                if len(self.buffer) >= 9 + length:
                    kind, flags, stream = struct.unpack(">BBI", self.buffer[3:9])
                    payload = self.buffer[9:9 + length]
                    self.buffer = self.buffer[9 + length:]
                    return kind, flags, stream & 0x7FFFFFFF, payload
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("the server closed the connection")
            self.buffer += chunk

    def windows(self) -> tuple[int, int]:
        """The server's first announcements: (stream window, connection window)."""
        stream_window, connection_window = 65535, 65535
        settings_seen = update_seen = False
        deadline = time.monotonic() + 10
        while not (settings_seen and update_seen) and time.monotonic() < deadline:
            kind, flags, stream, payload = self.read_frame()
            if kind == SETTINGS and not flags & ACK:
                settings_seen = True
                for i in range(0, len(payload), 6):
                    key, value = struct.unpack(">HI", payload[i:i + 6])
                    if key == INITIAL_WINDOW_SIZE:
                        stream_window = value
                self.sock.sendall(frame(SETTINGS, ACK, 0))
            elif kind == WINDOW_UPDATE and stream == 0:
                update_seen = True
                connection_window += struct.unpack(">I", payload)[0] & 0x7FFFFFFF
        return stream_window, connection_window

    def start_upload(self, stream: int, declared: int, sent: int) -> None:
        """Opens `stream`, a ModelInfer call, and sends the start of a gRPC message that
        declares `declared` bytes: its 5-byte prefix and then `sent` - 5 bytes of it."""
        def literal(name_index: int, value: bytes) -> bytes:  # HPACK, without indexing
            return bytes([name_index]) + bytes([len(value)]) + value

        headers = (bytes([0x83, 0x86])  # :method POST, :scheme http (static table)
                   + literal(4, b"/inference.GRPCInferenceService/ModelInfer")  # :path
                   + literal(1, b"localhost")  # :authority
                   + bytes([0x0F, 0x10, 16]) + b"application/grpc"  # content-type (31)
                   + b"\x00\x02te\x08trailers")
        prefix = b"\x00" + struct.pack(">I", declared)
        self.sock.sendall(frame(HEADERS, END_HEADERS, stream, headers)
                          + frame(DATA, 0, stream, prefix + bytes(sent - len(prefix))))

    def stream_grants(self, stream: int, enough: int, seconds: float) -> int:
        """What the server's WINDOW_UPDATEs on `stream` add to its window, read until they
        reach `enough` or `seconds` pass."""
        granted = 0
        self.sock.settimeout(0.2)
        deadline = time.monotonic() + seconds
        while granted < enough and time.monotonic() < deadline:
            try:
                kind, flags, on, payload = self.read_frame()
            except TimeoutError:
                continue
            if kind == SETTINGS and not flags & ACK:
                self.sock.sendall(frame(SETTINGS, ACK, 0))
            elif kind == WINDOW_UPDATE and on == stream:
                granted += struct.unpack(">I", payload)[0] & 0x7FFFFFFF
        return granted

    def close(self) -> None:
        self.sock.close()


@pytest.fixture(scope="module")
def server():
    s = quick_server("--http2-window-bytes", str(WINDOW), "--max-message-bytes", str(MAX_MESSAGE))
    yield s
    s.stop()


def test_the_server_announces_the_configured_window(server):
    assert f"http2_window_bytes={WINDOW}" in server.log()
    conn = Connection(server.address)
    try:
        assert conn.windows() == (WINDOW, WINDOW)
    finally:
        conn.close()



@pytest.mark.parametrize("declared", [8 << 20, MAX_MESSAGE])
def test_a_stream_being_read_may_send_the_rest_of_its_message_at_once(server, declared):
    """Not in 1 MiB turns of waiting for the server's WINDOW_UPDATE (gRPC's read-ahead):
    the server holds the whole message before the handler runs whatever the pace."""
    conn = Connection(server.address)
    try:
        conn.windows()
        sent = 16384
        conn.start_upload(1, declared, sent)
        rest = declared + 5 - sent
        # The window left is WINDOW - sent; the grants make it cover the rest.
        granted = conn.stream_grants(1, rest + sent - WINDOW, seconds=10)
        assert WINDOW - sent + granted >= rest
        assert WINDOW - sent + granted <= rest + WINDOW  # never past the message's end + WINDOW
    finally:
        conn.close()


def test_a_rest_over_the_largest_message_gets_grpcs_read_ahead_only(server):
    """Such a message is refused once received: it crosses at gRPC's pace, the window at
    most the fixed window plus gRPC's read-ahead."""
    conn = Connection(server.address)
    try:
        conn.windows()
        sent = 16384
        conn.start_upload(1, 2 * MAX_MESSAGE, sent)
        granted = conn.stream_grants(1, GRPC_READ_AHEAD + 1, seconds=2)
        assert 0 < granted <= GRPC_READ_AHEAD + sent
    finally:
        conn.close()
