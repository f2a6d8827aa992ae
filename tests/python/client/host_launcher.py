"""Starts server processes on this host for client tests that run elsewhere.

The wheel test (scripts/wheel_container_test.sh) runs the Python client's test-suite in
a bare container that has the installed wheel but neither the server nor the libraries
it needs. There, myops_testing.ServerProcess asks this launcher (MYOPS_TEST_LAUNCHER=HOST:PORT)
to start each server on the host instead of starting it itself; the container shares
the host's network, /tmp (log files) and the repository's path, so addresses and paths
mean the same on both sides.

    python host_launcher.py BUILD_DIR      # prints "launcher on 127.0.0.1:PORT"

Protocol: POST /start {"argv": [...], "log": PATH} -> {"id": N}; POST /poll {"id"} ->
{"returncode": int|null}; POST /signal {"id", "signal"}; POST /wait {"id", "timeout"} ->
{"returncode": int|null}. Only programs under BUILD_DIR are started; it listens on
loopback only and lives as long as the test run.
"""

from __future__ import annotations

import http.server
import json
import pathlib
import subprocess
import sys
import threading
from typing import Any


class Launcher(http.server.BaseHTTPRequestHandler):
    build: pathlib.Path
    processes: dict[int, subprocess.Popen[bytes]] = {}
    lock = threading.Lock()

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        try:
            answer = self.handle_action(self.path.strip("/"), body)
            code = 200
        except (KeyError, ValueError, OSError) as error:
            answer, code = {"error": f"{type(error).__name__}: {error}"}, 400
        data = json.dumps(answer).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def handle_action(self, action: str, body: dict[str, Any]) -> dict[str, Any]:
        if action == "start":
            program = pathlib.Path(body["argv"][0]).resolve()
            if self.build not in program.parents:
                raise ValueError(f"{program} is not under {self.build}")
            log = open(body["log"], "w")  # noqa: SIM115 (owned by the child's lifetime)
            process = subprocess.Popen(body["argv"], stdout=log, stderr=subprocess.STDOUT)
            log.close()
            with self.lock:
                self.processes[process.pid] = process
            return {"id": process.pid}
        with self.lock:
            process = self.processes[int(body["id"])]
        if action == "poll":
            return {"returncode": process.poll()}
        if action == "signal":
            process.send_signal(int(body["signal"]))
            return {}
        if action == "wait":
            try:
                return {"returncode": process.wait(timeout=float(body["timeout"]))}
            except subprocess.TimeoutExpired:
                return {"returncode": None}
        raise ValueError(f"unknown action {action!r}")

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass


def main() -> None:
    Launcher.build = pathlib.Path(sys.argv[1]).resolve()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Launcher)
    print(f"launcher on 127.0.0.1:{server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    finally:
        for process in Launcher.processes.values():
            if process.poll() is None:
                process.kill()


if __name__ == "__main__":
    main()
