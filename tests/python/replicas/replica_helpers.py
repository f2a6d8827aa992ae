"""Helpers of the replica tests: several real myops-server processes, each with its own
--replica-name, on loopback addresses, and a tiny DNS server whose answer (the A records
of one name) the test changes, standing in for a headless Kubernetes Service as pods come
and go.

Every loopback address 127.0.0.0/8 reaches this machine on Linux, so replicas can share
one port on 127.0.0.1, 127.0.0.2, ...: DNS A records carry no port.
"""

from __future__ import annotations

import socket
import struct
import threading

from myops_testing import ServerProcess


class Replica(ServerProcess):
    """myops-server on HOST:PORT (port 0: any) named `name` (--replica-name)."""

    def __init__(self, name: str, *flags: str, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__("--cpu-workers", "2", "--replica-name", name, *flags, host=host,
                         port=port, metrics=False)
        self.name = name


def ipv4_target(replicas: list[Replica]) -> str:
    """gRPC's static list of addresses: "ipv4:127.0.0.1:P1,127.0.0.1:P2,..."."""
    return "ipv4:" + ",".join(r.address for r in replicas)


class DnsServer:
    """A UDP DNS server on 127.0.0.1 answering A queries for every name with `addresses`
    (settable while it runs; TTL 0) and any other query (AAAA, TXT, ...) with no
    record. Just enough of RFC 1035 for gRPC's c-ares resolver, pointed at it by the
    target's authority: "dns://127.0.0.1:PORT/NAME:GRPC_PORT"."""

    def __init__(self, addresses: list[str]) -> None:
        self._lock = threading.Lock()
        self._addresses = list(addresses)
        self.queries = 0
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._socket.bind(("127.0.0.1", 0))
        self._socket.settimeout(0.1)
        self.port = self._socket.getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def set_addresses(self, addresses: list[str]) -> None:
        with self._lock:
            self._addresses = list(addresses)

    def target(self, name: str, port: int) -> str:
        return f"dns://127.0.0.1:{self.port}/{name}:{port}"

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                query, peer = self._socket.recvfrom(512)
            except socket.timeout:
                continue
            answer = self._answer(query)
            if answer is not None:
                self._socket.sendto(answer, peer)

    def _answer(self, query: bytes) -> bytes | None:
        if len(query) < 12:
            return None
        (ident, _flags, qdcount) = struct.unpack("!HHH", query[:6])
        if qdcount != 1:
            return None
        end = 12  # The question: labels up to the root, then type and class.
        while end < len(query) and query[end] != 0:
            end += 1 + query[end]
        if end + 5 > len(query):
            return None
        question = query[12:end + 5]
        (qtype,) = struct.unpack("!H", query[end + 1:end + 3])
        with self._lock:
            self.queries += 1
            addresses = list(self._addresses) if qtype == 1 else []
        header = struct.pack("!HHHHHH", ident, 0x8580, 1, len(addresses), 0, 0)
        records = b"".join(
            struct.pack("!HHHIH", 0xC00C, 1, 1, 0, 4) + socket.inet_aton(a) for a in addresses)
        return header + question + records

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self._socket.close()
