"""The HTTP/REST front end's edges, each on its own server: curl (JSON in, JSON out),
the bearer token, readiness while draining, requests in flight at shutdown, limits
(body size, chunked bodies, methods, paths), TLS and client certificates (gRPC's
--tls-* files), and its metrics label."""

from __future__ import annotations

import http.client
import json
import signal
import socket
import subprocess
import threading

import numpy as np
import pytest

import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from myops_testing import SERVER, ServerProcess, poll

SCALE_SHIFT = "myops::scale_shift"


def curl(*args: str) -> tuple[int, str]:
    """(HTTP status, body) of a curl call."""
    out = subprocess.run(["curl", "-sS", "-w", "\n%{http_code}", *args], capture_output=True,
                         text=True, timeout=60, check=True).stdout
    body, status = out.rsplit("\n", 1)
    return int(status), body


def raw(address: str, request: bytes) -> bytes:
    """The first bytes the server answers a hand-written request with."""
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(request)
        return s.recv(65536)


@pytest.fixture(scope="module")
def server():
    s = ServerProcess("--http-address", "127.0.0.1:0", "--max-message-bytes", "4096")
    yield s
    s.close()


def test_curl_health_and_json_infer(server):
    base = f"http://{server.http_address}"
    assert curl(f"{base}/v2/health/live") == (200, '{"live":true}')
    assert curl(f"{base}/v2/health/ready") == (200, '{"ready":true}')
    status, body = curl(f"{base}/v2/models/{SCALE_SHIFT}/ready")
    assert status == 200
    request = {"id": "c1", "inputs": [{"name": "x", "shape": [2, 2], "datatype": "FP32",
                                       "data": [[1, 2], [3, 4]]}],
               "parameters": {"alpha": 2.0, "beta": 0.5}}
    status, body = curl("-H", "Content-Type: application/json", "-d", json.dumps(request),
                        f"{base}/v2/models/{SCALE_SHIFT}/versions/1/infer")
    assert status == 200
    answer = json.loads(body)
    assert answer["id"] == "c1" and answer["model_name"] == SCALE_SHIFT
    assert answer["outputs"] == [{"name": "output__0", "datatype": "FP32", "shape": [2, 2],
                                  "data": [2.5, 4.5, 6.5, 8.5]}]
    status, body = curl(f"{base}/v2/models/myops::nope")
    assert status == 404 and "unknown model 'myops::nope'" in json.loads(body)["error"]


def test_limits_methods_and_paths(server):
    base = f"http://{server.http_address}"
    big = json.dumps({"inputs": [{"name": "x", "shape": [2000], "datatype": "FP32",
                                  "data": [1.0] * 2000}]})
    status, body = curl("-d", big, f"{base}/v2/models/{SCALE_SHIFT}/infer")
    assert status == 413
    assert "more than the largest message this server accepts (4096 bytes" in body
    status, body = curl("-H", "Transfer-Encoding: chunked", "-d", "{}",
                        f"{base}/v2/models/{SCALE_SHIFT}/infer")
    assert status == 411 and "needs a Content-Length" in body
    status, body = curl("-X", "DELETE", f"{base}/v2/models/{SCALE_SHIFT}")
    assert status == 405 and "takes GET" in body
    status, body = curl(f"{base}/v2/models/{SCALE_SHIFT}/infer")
    assert status == 405 and "takes POST" in body
    for path in ("/v3", "/v2/models/x/versions/1/ready/more", "/v2/models/x/explain"):
        status, body = curl(f"{base}{path}")
        assert status == 404 and "no endpoint" in json.loads(body)["error"]
    # A header block over the limit, and garbage: statuses, and the server lives on.
    answer = raw(server.http_address, b"GET /v2 HTTP/1.1\r\nX: " + b"a" * 40000 + b"\r\n\r\n")
    assert answer.split(b" ")[1] == b"431" and b"larger than 16384 bytes" in answer
    answer = raw(server.http_address, b"\x16\x03\x01garbage\r\n\r\n")
    assert answer.split(b" ")[1] == b"400" and b"METHOD TARGET HTTP/1.x" in answer
    answer = raw(server.http_address, b"GET /v2 HTTP/2.0\r\n\r\n")
    assert answer.split(b" ")[1] == b"505"
    assert curl(f"{base}/v2/health/live")[0] == 200
    assert server.process.poll() is None


def test_a_body_shorter_than_its_content_length_is_a_precise_400(server):
    """A client that announces 1000 bytes, sends 10 and closes its side gets 400 saying
    so (not a hang, not a parse error of half a body), and what the body held returns."""
    request = (f"POST /v2/models/{SCALE_SHIFT}/infer HTTP/1.1\r\nHost: x\r\n"
               "Content-Length: 1000\r\n\r\n{\"inputs\":").encode()
    host, port = server.http_address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(request)
        s.shutdown(socket.SHUT_WR)
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 400"), answer[:200]
    assert b"the client sent 10 of the body's 1000 bytes" in answer, answer
    assert curl(f"http://{server.http_address}/v2/health/ready")[0] == 200
    assert poll(server.gauges_idle, timeout=60)


def test_metrics_count_http_requests(server):
    client = httpclient.InferenceServerClient(server.http_address)
    before = server.metrics().get('myops_requests_total{code="OK",rpc="HttpModelInfer"}', 0)
    x = httpclient.InferInput("x", [3], "FP32")
    x.set_data_from_numpy(np.ones(3, np.float32))
    for _ in range(3):
        client.infer(SCALE_SHIFT, [x], parameters={"alpha": 1.0, "beta": 1.0})
    with pytest.raises(InferenceServerException):
        client.infer(SCALE_SHIFT, [x], parameters={"alpha": 1.0})
    client.close()
    m = server.metrics()
    assert m['myops_requests_total{code="OK",rpc="HttpModelInfer"}'] == before + 3
    assert m['myops_requests_total{code="INVALID_ARGUMENT",rpc="HttpModelInfer"}'] >= 1
    assert poll(server.gauges_idle, timeout=60)


def test_json_outputs_count_against_the_memory_budget():
    """A response's JSON text is reserved before it is built: 20k floats as JSON data
    (64 bytes each reserved) do not fit a 1 MB budget, the same as binary data do."""
    server = ServerProcess("--http-address", "127.0.0.1:0", "--max-inflight-bytes", "1000000")
    client = httpclient.InferenceServerClient(server.http_address)
    x = httpclient.InferInput("x", [20000], "FP32")
    x.set_data_from_numpy(np.ones(20000, np.float32))
    params = {"alpha": 2.0, "beta": 1.0}
    try:
        out = client.infer(SCALE_SHIFT, [x], parameters=params)  # binary out: fits
        assert (out.as_numpy("output__0") == 3.0).all()
        with pytest.raises(InferenceServerException) as raised:
            client.infer(SCALE_SHIFT, [x], parameters=params, outputs=[
                httpclient.InferRequestedOutput("output__0", binary_data=False)])
        assert raised.value.status() == "429"
        assert "memory budget" in raised.value.message()
        assert poll(server.gauges_idle, timeout=60)
    finally:
        client.close()
        server.close()


def test_json_request_bodies_count_against_the_memory_budget():
    """A request's body is reserved before it is read, with what parsing it holds (24 bytes
    per byte of JSON): 20k floats as binary data fit a 1 MB budget, as JSON data (about
    4 bytes of text each) they do not, and the refusal says why."""
    server = ServerProcess("--http-address", "127.0.0.1:0", "--max-inflight-bytes", "1000000")
    client = httpclient.InferenceServerClient(server.http_address)
    params = {"alpha": 2.0, "beta": 1.0}
    binary_out = [httpclient.InferRequestedOutput("output__0", binary_data=True)]
    try:
        for binary in (True, False):
            x = httpclient.InferInput("x", [20000], "FP32")
            x.set_data_from_numpy(np.ones(20000, np.float32), binary_data=binary)
            if binary:
                out = client.infer(SCALE_SHIFT, [x], parameters=params, outputs=binary_out)
                assert (out.as_numpy("output__0") == 3.0).all()
                continue
            with pytest.raises(InferenceServerException) as raised:
                client.infer(SCALE_SHIFT, [x], parameters=params, outputs=binary_out)
            assert raised.value.status() == "429"
            assert "more than the server's whole memory budget" in raised.value.message()
        assert poll(server.gauges_idle, timeout=60)
    finally:
        client.close()
        server.close()


def test_bearer_token(tmp_path):
    token = tmp_path / "token"
    token.write_text("s3cret\n")
    server = ServerProcess("--auth-token-file", str(token), "--http-address", "127.0.0.1:0")
    client = httpclient.InferenceServerClient(server.http_address)
    x = httpclient.InferInput("x", [2], "FP32")
    x.set_data_from_numpy(np.array([1, 2], dtype=np.float32))
    params = {"alpha": 2.0, "beta": 0.5}
    try:
        # Health is open for probes, as grpc.health.v1 is.
        assert client.is_server_live() and client.is_server_ready()
        for call in (client.get_server_metadata,
                     lambda: client.get_model_metadata(SCALE_SHIFT),
                     lambda: client.infer(SCALE_SHIFT, [x], parameters=params),
                     lambda: client.infer(SCALE_SHIFT, [x], parameters=params,
                                          headers={"Authorization": "Bearer wrong"})):
            with pytest.raises(InferenceServerException) as raised:
                call()
            assert raised.value.status() == "401"
            assert 'requires the header "Authorization: Bearer <token>"' in \
                raised.value.message()
        good = {"Authorization": "Bearer s3cret"}
        out = client.infer(SCALE_SHIFT, [x], parameters=params, headers=good)
        np.testing.assert_array_equal(out.as_numpy("output__0"), [2.5, 4.5])
    finally:
        client.close()
        server.close()


def test_not_ready_while_draining_and_in_flight_requests_finish():
    server = ServerProcess("--http-address", "127.0.0.1:0", "--drain-delay", "2")
    base = f"http://{server.http_address}"
    x = np.full(1 << 22, 1.0, dtype=np.float32)  # 16 MiB: requests still in flight at SIGTERM
    answers, failures = [], []

    def infer():  # tritonclient.http clients are gevent-based: one per thread
        client = httpclient.InferenceServerClient(server.http_address, network_timeout=120)
        t = httpclient.InferInput("x", list(x.shape), "FP32")
        t.set_data_from_numpy(x)
        try:
            for _ in range(40):
                out = client.infer(SCALE_SHIFT, [t], parameters={"alpha": 2.0, "beta": 1.0})
                answers.append(out.as_numpy("output__0"))
        except Exception as e:  # once the server stops: checked below
            failures.append(e)
        finally:
            client.close()
    try:
        assert curl(f"{base}/v2/health/ready")[0] == 200
        worker = threading.Thread(target=infer)
        worker.start()
        assert poll(lambda: len(answers) > 0, timeout=60)
        server.process.send_signal(signal.SIGTERM)
        assert poll(lambda: curl(f"{base}/v2/health/ready")[0] == 400, timeout=60)
        assert curl(f"{base}/v2/health/live")[0] == 200
        assert curl(f"{base}/v2/models/{SCALE_SHIFT}/ready")[0] == 400
        assert server.process.wait(timeout=120) == 0
        worker.join(timeout=120)
        assert not worker.is_alive()
        # Every answer the client got is complete and right: in-flight requests finished.
        assert answers and all(a.shape == x.shape and (a == 3.0).all() for a in answers)
        # The client's calls end by the server closing connections once it has stopped,
        # never by an error answer (a refused or broken request).
        assert len(failures) <= 1, failures
        for e in failures:
            assert isinstance(e, (http.client.HTTPException, ConnectionError)), repr(e)
            assert not isinstance(e, InferenceServerException), repr(e)
    finally:
        server.close()


def make_cert(directory, name: str):
    """A self-signed certificate for localhost/127.0.0.1 and its key (openssl CLI)."""
    cert, key = directory / f"{name}.pem", directory / f"{name}.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    return cert, key


def test_tls_with_grpcs_certificate(tmp_path):
    cert, key = make_cert(tmp_path, "server")
    server = ServerProcess("--http-address", "127.0.0.1:0", "--tls-cert", str(cert),
                           "--tls-key", str(key))
    try:
        assert "(TLS)" in server.log()
        base = f"https://{server.http_address}"
        assert curl("--cacert", str(cert), f"{base}/v2/health/ready")[0] == 200
        body = {"inputs": [{"name": "x", "shape": [3], "datatype": "FP32", "data": [1, 2, 3]}],
                "parameters": {"alpha": 2.0, "beta": 1.0}}
        status, text = curl("--cacert", str(cert), f"{base}/v2/models/{SCALE_SHIFT}/infer",
                            "-d", json.dumps(body))
        assert status == 200 and json.loads(text)["outputs"][0]["data"] == [3.0, 5.0, 7.0]
        # TLS only: no plaintext answer on that port, and an untrusted certificate fails.
        plain = subprocess.run(["curl", "-sS", f"http://{server.http_address}/v2/health/ready"],
                               capture_output=True, text=True, timeout=60)
        assert plain.returncode != 0
        untrusted = subprocess.run(["curl", "-sS", f"{base}/v2/health/ready"],
                                   capture_output=True, text=True, timeout=60)
        assert untrusted.returncode != 0 and "certificate" in untrusted.stderr
        client = httpclient.InferenceServerClient(server.http_address, ssl=True,
                                                  ssl_options={"ca_certs": str(cert)})
        assert client.is_server_ready() and client.is_model_ready(SCALE_SHIFT)
        client.close()
    finally:
        server.close()


def test_tls_client_certificates_are_required_with_client_ca(tmp_path):
    cert, key = make_cert(tmp_path, "server")
    client_cert, client_key = make_cert(tmp_path, "client")
    server = ServerProcess("--http-address", "127.0.0.1:0", "--tls-cert", str(cert),
                           "--tls-key", str(key), "--tls-client-ca", str(client_cert))
    try:
        url = f"https://{server.http_address}/v2/health/ready"
        without = subprocess.run(["curl", "-sS", "--cacert", str(cert), url],
                                 capture_output=True, text=True, timeout=60)
        assert without.returncode != 0, without.stdout
        assert curl("--cacert", str(cert), "--cert", str(client_cert), "--key",
                    str(client_key), url)[0] == 200
    finally:
        server.close()


def test_tls_files_that_do_not_load_stop_the_server(tmp_path):
    cert, _ = make_cert(tmp_path, "server")
    _, other_key = make_cert(tmp_path, "other")
    done = subprocess.run([str(SERVER), "--address", "127.0.0.1:0", "--devices", "cpu",
                           "--http-address", "127.0.0.1:0", "--tls-cert", str(cert),
                           "--tls-key", str(other_key)], capture_output=True, text=True,
                          timeout=120)
    # A start-up error, not a crash: exit status 1 and one line naming the key that does
    # not match its certificate, before any port opens.
    assert done.returncode == 1, done.stderr
    assert f"myops-server: --tls-key {other_key}: " in done.stderr, done.stderr
    assert "key values mismatch" in done.stderr, done.stderr