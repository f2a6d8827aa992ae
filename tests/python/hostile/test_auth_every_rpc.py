"""Bearer-token auth holds for every RPC the server offers, not only those a test names:
the services are listed by the server's own reflection, each method is read from the
protos in proto/, and each is called without a token (UNAUTHENTICATED, before anything
else) and with one (anything but UNAUTHENTICATED). A service added without auth, or a
handler that loses its check, fails here. The same for every route of the HTTP/REST
front end (401 without the token; the health routes are open, as grpc.health.v1 is)."""

from __future__ import annotations

import base64
import http.client
import os
import pathlib
import re
import subprocess
import urllib.error
import urllib.request

import grpc
import pytest

from myops_testing import SERVER, ServerProcess, quick_server
from myops_testing.paths import REPO

TOKEN = "tok-every-rpc"
# Open by design: probes (Kubernetes, load balancers) and API discovery carry no token.
OPEN = {"grpc.health.v1.Health", "grpc.reflection.v1alpha.ServerReflection"}
PROTOS = [REPO / "proto" / "myops" / "v1" / "myops.proto",
          REPO / "proto" / "kserve" / "v2" / "grpc_predict_v2.proto"]


def proto_methods() -> dict[str, list[tuple[str, bool, bool]]]:
    """Service full name -> [(method, client streaming, server streaming)] from PROTOS."""
    services: dict[str, list[tuple[str, bool, bool]]] = {}
    rpc = re.compile(r"rpc\s+(\w+)\s*\(\s*(stream\s+)?[\w.]+\s*\)\s*returns\s*\(\s*(stream\s+)?")
    for path in PROTOS:
        text = re.sub(r"//[^\n]*", "", path.read_text())
        package = re.search(r"^\s*package\s+([\w.]+)\s*;", text, re.M).group(1)
        for service in re.finditer(r"service\s+(\w+)\s*\{(.*?)\n\}", text, re.S):
            services[f"{package}.{service.group(1)}"] = [
                (m.group(1), bool(m.group(2)), bool(m.group(3)))
                for m in rpc.finditer(service.group(2))]
    return services


def _fields(data: bytes):
    """(field number, value) of a protobuf message: varints as int, the rest as bytes."""
    i = 0
    while i < len(data):
        key, i = _varint(data, i)
        if key & 7 == 0:
            value, i = _varint(data, i)
        elif key & 7 == 2:
            n, i = _varint(data, i)
            value, i = data[i:i + n], i + n
        else:
            raise ValueError(f"unexpected wire type {key & 7}")
        yield key >> 3, value


def _varint(data: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        b = data[i]
        value, shift, i = value | (b & 0x7F) << shift, shift + 7, i + 1
        if not b & 0x80:
            return value, i


def listed_services(channel: grpc.Channel) -> set[str]:
    """The services the server's reflection lists (ServerReflectionRequest.list_services)."""
    call = channel.stream_stream("/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo")
    [response] = list(call(iter([b"\x3a\x00"]), timeout=30))  # field 7 (list_services): ""
    listing = dict(_fields(response))[6]  # list_services_response
    return {dict(_fields(service))[1].decode() for number, service in _fields(listing)
            if number == 1}


def call_code(channel: grpc.Channel, path: str, client_stream: bool, server_stream: bool,
              token: str | None) -> grpc.StatusCode:
    """The status of `path` called with one empty message (or none, for a stream)."""
    metadata = [("authorization", f"Bearer {token}")] if token else []
    try:
        if client_stream or server_stream:
            call = channel.stream_stream(path) if client_stream else channel.unary_stream(path)
            responses = call(iter([]) if client_stream else b"", timeout=30, metadata=metadata)
            for _ in responses:
                pass
        else:
            channel.unary_unary(path)(b"", timeout=30, metadata=metadata)
    except grpc.RpcError as e:
        return e.code()
    return grpc.StatusCode.OK


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    token_file = tmp_path_factory.mktemp("auth") / "token"
    token_file.write_text(TOKEN)
    s = quick_server("--auth-token-file", str(token_file), "--http-address", "127.0.0.1:0",
                     "--allow-shared-memory")
    yield s
    s.stop()


def test_the_server_offers_exactly_the_services_this_test_knows(server):
    with grpc.insecure_channel(server.address) as channel:
        assert listed_services(channel) == set(proto_methods()) | OPEN


@pytest.mark.parametrize("service,method,client_stream,server_stream", [
    (service, *m) for service, methods in proto_methods().items() for m in methods])
def test_every_rpc_needs_the_token(server, service, method, client_stream, server_stream):
    path = f"/{service}/{method}"
    with grpc.insecure_channel(server.address) as channel:
        assert call_code(channel, path, client_stream, server_stream, None) == \
            grpc.StatusCode.UNAUTHENTICATED
        assert call_code(channel, path, client_stream, server_stream, "wrong") == \
            grpc.StatusCode.UNAUTHENTICATED
        assert call_code(channel, path, client_stream, server_stream, TOKEN) != \
            grpc.StatusCode.UNAUTHENTICATED


MODEL = "/v2/models/myops::scale_shift"
# Every route of frontends/oip/rest/service.cc and rest/shm.h (and a path that is none).
ROUTES = [("GET", "/v2"), ("GET", "/v2/models/stats"), ("GET", MODEL), ("GET", MODEL + "/ready"),
          ("GET", MODEL + "/config"), ("GET", MODEL + "/stats"),
          ("GET", MODEL + "/versions/1/ready"), ("POST", MODEL + "/infer"),
          ("GET", "/v2/systemsharedmemory/status"),
          ("GET", "/v2/systemsharedmemory/region/r/status"),
          ("POST", "/v2/systemsharedmemory/region/r/register"),
          ("POST", "/v2/systemsharedmemory/region/r/unregister"),
          ("POST", "/v2/systemsharedmemory/unregister"),
          ("POST", "/v2/repository/index"), ("POST", "/v2/repository/models/m/load"),
          ("POST", "/v2/repository/models/m/unload"), ("GET", "/v2/trace/setting"),
          ("POST", "/v2/trace/setting"), ("GET", MODEL + "/trace/setting"), ("GET", "/v2/logging"),
          ("POST", "/v2/logging"), ("GET", "/v2/cudasharedmemory/status"),
          ("GET", "/v2/cudasharedmemory/region/r/status"),
          ("POST", "/v2/cudasharedmemory/region/r/register"),
          ("POST", "/v2/cudasharedmemory/region/r/unregister"),
          ("POST", "/v2/cudasharedmemory/unregister"), ("GET", "/v2/no/such/route")]
OPEN_ROUTES = [("GET", "/v2/health/live"), ("GET", "/v2/health/ready")]


def status_of(url: str, method: str = "GET", authorization: str | None = None) -> int:
    """The HTTP status of one request (a body of "{}" for POST)."""
    request = urllib.request.Request(url, method=method, data=b"{}" if method == "POST" else None)
    if authorization:
        request.add_header("Authorization", authorization)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as e:
        return e.code


def http_status(server, method: str, path: str, token: str | None) -> int:
    return status_of(f"http://{server.http_address}{path}", method,
                     f"Bearer {token}" if token else None)


@pytest.mark.parametrize("method,path", ROUTES)
def test_every_rest_route_needs_the_token(server, method, path):
    assert http_status(server, method, path, None) == 401
    assert http_status(server, method, path, "wrong") == 401
    assert http_status(server, method, path, TOKEN) != 401


@pytest.mark.parametrize("method,path", OPEN_ROUTES)
def test_rest_health_needs_no_token(server, method, path):
    assert http_status(server, method, path, None) == 200


def scrape_status(address: str, password: str | None) -> int:
    credentials = base64.b64encode(f"prometheus:{password}".encode()).decode()
    return status_of(f"http://{address}/metrics",
                     authorization=None if password is None else f"Basic {credentials}")


def test_metrics_need_the_token_with_metrics_auth(tmp_path):
    """--metrics-auth: /metrics answers 401 without HTTP Basic credentials whose password
    is the token (any user name); without the flag it stays open, as for probes."""
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    guarded = ServerProcess("--auth-token-file", str(token_file), "--metrics-auth")
    try:
        assert scrape_status(guarded.metrics_address, None) == 401
        assert scrape_status(guarded.metrics_address, "wrong") == 401
        assert scrape_status(guarded.metrics_address, TOKEN) == 200
    finally:
        guarded.stop()
    open_server = ServerProcess("--auth-token-file", str(token_file))
    try:
        assert scrape_status(open_server.metrics_address, None) == 200
    finally:
        open_server.stop()


@pytest.mark.skipif(bool(os.environ.get("MYOPS_TEST_LAUNCHER")),
                    reason="runs the server binary itself")
@pytest.mark.parametrize("flag,message", [
    ("--metrics-auth", "--metrics-auth needs --auth-token-file"),
    ("--metrics-tls", "--metrics-tls needs --tls-cert and --tls-key"),
])
def test_a_metrics_flag_without_what_it_needs_stops_start_up(flag, message):
    done = subprocess.run([str(SERVER), "--address", "127.0.0.1:0", "--devices", "cpu",
                           "--metrics-address", "127.0.0.1:0", flag],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert message in done.stderr


def make_cert(directory: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path]:
    """A self-signed certificate for 127.0.0.1 and its key (openssl CLI)."""
    cert, key = directory / "server.pem", directory / "server.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    return cert, key


def test_metrics_over_tls_with_basic_auth(tmp_path):
    """--metrics-tls: the metrics port speaks HTTPS only, with the gRPC port's
    certificate; with --metrics-auth the scrape also needs a token."""
    import ssl
    cert, key = make_cert(tmp_path)
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    s = ServerProcess("--tls-cert", str(cert), "--tls-key", str(key), "--metrics-tls",
                      "--auth-token-file", str(token_file), "--metrics-auth")
    try:
        assert "/metrics (TLS)" in s.log()
        trusted = ssl.create_default_context(cafile=str(cert))

        def scrape(password: str | None, context: ssl.SSLContext | None = trusted,
                   scheme: str = "https") -> int:
            request = urllib.request.Request(f"{scheme}://{s.metrics_address}/metrics")
            if password is not None:
                basic = base64.b64encode(f"prometheus:{password}".encode()).decode()
                request.add_header("Authorization", f"Basic {basic}")
            try:
                with urllib.request.urlopen(request, timeout=30, context=context) as r:
                    assert b"myops_requests_total" in r.read()
                    return r.status
            except urllib.error.HTTPError as e:
                return e.code

        assert scrape(TOKEN) == 200
        assert scrape(None) == 401
        with pytest.raises(urllib.error.URLError, match="CERTIFICATE_VERIFY_FAILED"):
            scrape(TOKEN, context=ssl.create_default_context())  # an untrusted certificate
        with pytest.raises((urllib.error.URLError, ConnectionError, http.client.HTTPException)):
            scrape(TOKEN, context=None, scheme="http")  # no plaintext on that port
    finally:
        s.close()
