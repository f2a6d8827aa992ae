"""The HTTP/2 receive window (--http2-window-bytes, server/src/frontends/grpc/http2_window.h),
seen on the wire by a raw HTTP/2 client of the real myops-server: the server announces
the configured window per stream (SETTINGS_INITIAL_WINDOW_SIZE) and per connection (a
WINDOW_UPDATE on stream 0), not gRPC's 64 KiB nor a window probed from the network. What
a client may send into a stream the server does not read is that window (HTTP/2 flow
control, which gRPC enforces); the memory it makes the server hold is the all-at-once
test's (test_all_at_once.py)."""

from __future__ import annotations

import socket
import struct
import time

import pytest

from myops_testing import quick_server

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
SETTINGS, WINDOW_UPDATE = 0x4, 0x8
ACK = 0x1
INITIAL_WINDOW_SIZE = 0x4
WINDOW = 3 << 20  # neither gRPC's default nor a power of two a probe would pick


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

    def close(self) -> None:
        self.sock.close()


@pytest.fixture(scope="module")
def server():
    s = quick_server("--http2-window-bytes", str(WINDOW))
    yield s
    s.stop()


def test_the_server_announces_the_configured_window(server):
    assert f"http2_window_bytes={WINDOW}" in server.log()
    conn = Connection(server.address)
    try:
        assert conn.windows() == (WINDOW, WINDOW)
    finally:
        conn.close()

