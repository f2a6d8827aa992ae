"""Free loopback ports and polling."""

from __future__ import annotations

import socket
import time
from typing import Callable


def free_port(host: str = "127.0.0.1") -> int:
    """A port that was free on `host` a moment ago."""
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def poll(condition: Callable[[], object], timeout: float = 120.0, interval: float = 0.05) -> bool:
    """Calls condition() until it is true or `timeout` seconds passed; returns whether it held."""
    deadline = time.monotonic() + timeout
    while True:
        if condition():
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(interval)
