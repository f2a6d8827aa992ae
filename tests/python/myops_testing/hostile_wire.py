"""Hand-made myops.v1 wire bytes for the hostile suite: valid requests and crafted ones
(unknown groups, packed shapes of zeros, huge strings), sent through raw grpcio calls so
that nothing on the client side checks them first."""

from __future__ import annotations

import os
import re
import struct
import time
import urllib.request

import grpc

UNARY = "/myops.v1.Myops/ScaleShift"
STREAM = "/myops.v1.Myops/ScaleShiftStream"
INFO = "/myops.v1.Myops/ServerInfo"
FLOAT32 = 1


def varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def field(number: int, wire_type: int, payload: bytes) -> bytes:
    key = varint((number << 3) | wire_type)
    if wire_type == 2:
        return key + varint(len(payload)) + payload
    return key + payload


def tensor(shape: list[int], data: bytes, dtype: int = FLOAT32) -> bytes:
    packed = b"".join(varint(d & (2**64 - 1)) for d in shape)
    return (field(1, 0, varint(dtype)) + (field(2, 2, packed) if shape else b"") +
            field(3, 2, data))


def request(shape: list[int], data: bytes, alpha: float = 2.0, beta: float = 1.0,
            device: bytes = b"", request_id: int = 0, dtype: int = FLOAT32) -> bytes:
    out = field(1, 2, tensor(shape, data, dtype))
    out += field(2, 1, struct.pack("<d", alpha)) + field(3, 1, struct.pack("<d", beta))
    if device:
        out += field(4, 2, device)
    if request_id:
        out += field(5, 0, varint(request_id))
    return out


def float32_request(n_bytes: int, request_id: int = 0) -> bytes:
    """A valid float32 request of n_bytes of data (n_bytes a multiple of 4)."""
    return request([n_bytes // 4], os.urandom(64) * (n_bytes // 64) + bytes(n_bytes % 64),
                   request_id=request_id)


def channel(address: str, max_bytes: int = 1 << 30) -> grpc.Channel:
    return grpc.insecure_channel(address, options=[
        ("grpc.max_send_message_length", max_bytes),
        ("grpc.max_receive_message_length", max_bytes),
    ])


def unary(ch: grpc.Channel, name: str = UNARY):
    return ch.unary_unary(name, request_serializer=None, response_deserializer=None)


def stream(ch: grpc.Channel):
    return ch.stream_stream(STREAM, request_serializer=None, response_deserializer=None)


def call_status(ch: grpc.Channel, payload: bytes, timeout: float = 60.0):
    """(status code, details) of one unary ScaleShift with `payload` as its bytes."""
    try:
        unary(ch)(payload, timeout=timeout)
        return grpc.StatusCode.OK, ""
    except grpc.RpcError as e:
        return e.code(), e.details()


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def metrics_port(log_text: str) -> int:
    """The metrics port from a server's startup line ("metrics on HOST:PORT/metrics")."""
    return int(re.search(r"metrics on [\d.]+:(\d+)/metrics", log_text).group(1))


def gauge(port: int, name: str) -> float:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    return float(re.search(rf"^{name} (\S+)$", text, re.M).group(1))


def settles_to_zero(port: int, name: str, timeout: float = 30.0) -> bool:
    """Whether gauge `name` reads 0 within `timeout` seconds (polled)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if gauge(port, name) == 0:
            return True
        time.sleep(0.05)
    return False
