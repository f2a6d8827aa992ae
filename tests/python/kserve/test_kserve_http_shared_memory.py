"""The REST binding of Triton's system shared memory extension against the real server,
with tritonclient.http (register, status, unregister, inference naming regions for
inputs and outputs) and with plain HTTP for what the client hides: the response's
output carries the region's parameters and no data, the endpoints' errors and methods,
and 501 on a server without --allow-shared-memory. The rules behind them are those of
the gRPC binding (test_kserve_shared_memory.py)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
import uuid

import numpy as np
import pytest

import tritonclient.http as httpclient
import tritonclient.utils.shared_memory as shm
from tritonclient.utils import InferenceServerException

from myops_testing import ServerProcess

SCALE_SHIFT = "myops::scale_shift"


@pytest.fixture(scope="module")
def server():
    s = ServerProcess("--ops", "myops::*", "--http-address", "127.0.0.1:0",
                      "--allow-shared-memory")
    yield s
    s.close()


@pytest.fixture(scope="module")
def client(server):
    c = httpclient.InferenceServerClient(server.http_address)
    yield c
    c.close()


@pytest.fixture
def region(client):
    """make(nbytes) -> (name, key, handle): a registered region, gone after the test."""
    made = []

    def make(nbytes: int, register: bool = True):
        name = f"h{uuid.uuid4().hex[:12]}"
        key = f"/myops_test_{name}"
        handle = shm.create_shared_memory_region(name, key, nbytes)
        made.append(handle)
        if register:
            client.register_system_shared_memory(name, key, nbytes)
        return name, key, handle

    yield make
    client.unregister_system_shared_memory()
    for handle in made:
        shm.destroy_shared_memory_region(handle)


def http(server, method: str, path: str, body: dict | None = None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(f"http://{server.http_address}{path}", data=data,
                                     method=method)
    try:
        with urllib.request.urlopen(request, timeout=30) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def test_metadata_advertises_the_extension(client):
    assert "system_shared_memory" in client.get_server_metadata()["extensions"]


def test_infer_with_input_and_output_regions(client, region):
    x = np.linspace(-4, 4, 64, dtype=np.float32).reshape(8, 8)
    rin, _, hin = region(x.nbytes)
    rout, _, hout = region(x.nbytes)
    shm.set_shared_memory_region(hin, [x])
    inp = httpclient.InferInput("x", [8, 8], "FP32")
    inp.set_shared_memory(rin, x.nbytes)
    out = httpclient.InferRequestedOutput("output__0")
    out.set_shared_memory(rout, x.nbytes)
    result = client.infer(SCALE_SHIFT, [inp], outputs=[out],
                          parameters={"alpha": 0.5, "beta": 2.0})
    assert result.get_output("output__0")["shape"] == [8, 8]
    np.testing.assert_allclose(shm.get_contents_as_numpy(hout, np.float32, [8, 8]),
                               0.5 * x + 2.0, rtol=1e-6)


def test_region_input_with_json_output(client, region):
    x = np.arange(6, dtype=np.float32)
    rin, _, hin = region(x.nbytes)
    shm.set_shared_memory_region(hin, [x])
    inp = httpclient.InferInput("x", [6], "FP32")
    inp.set_shared_memory(rin, x.nbytes)
    result = client.infer(SCALE_SHIFT, [inp], outputs=[httpclient.InferRequestedOutput(
        "output__0", binary_data=False)], parameters={"alpha": 2.0, "beta": 1.0})
    np.testing.assert_array_equal(result.as_numpy("output__0"), 2 * x + 1)


def test_response_names_the_region_instead_of_data(server, region):
    x = np.ones(4, dtype=np.float32)
    rin, _, hin = region(16)
    rout, _, _ = region(32)
    shm.set_shared_memory_region(hin, [x])
    status, body = http(server, "POST", f"/v2/models/{SCALE_SHIFT}/infer", {
        "inputs": [{"name": "x", "shape": [4], "datatype": "FP32",
                    "parameters": {"shared_memory_region": rin,
                                   "shared_memory_byte_size": 16}}],
        "outputs": [{"name": "output__0",
                     "parameters": {"shared_memory_region": rout,
                                    "shared_memory_byte_size": 16,
                                    "shared_memory_offset": 16}}],
        "parameters": {"alpha": 1.0, "beta": 1.0}})
    assert status == 200, body
    (out,) = body["outputs"]
    assert "data" not in out
    assert out["parameters"] == {"shared_memory_region": rout, "shared_memory_byte_size": 16,
                                 "shared_memory_offset": 16}


def test_status_and_unregister(client, region, server):
    a, key_a, _ = region(64)
    b, _, _ = region(128)
    everything = {r["name"]: r for r in client.get_system_shared_memory_status()}
    assert everything[a]["key"] == key_a and everything[b]["byte_size"] == 128
    assert [r["name"] for r in client.get_system_shared_memory_status(region_name=b)] == [b]
    client.unregister_system_shared_memory(a)
    status, body = http(server, "GET", f"/v2/systemsharedmemory/region/{a}/status")
    assert status == 404 and a in body["error"]
    # Unregistering it again, or a name never registered, succeeds, as on Triton.
    client.unregister_system_shared_memory(a)
    status, body = http(server, "POST", "/v2/systemsharedmemory/region/never-registered/unregister")
    assert status == 200 and body == {}, body


def test_endpoint_errors(server, region):
    name, key, _ = region(64, register=False)
    status, body = http(server, "POST", f"/v2/systemsharedmemory/region/{name}/register",
                        {"key": key})
    assert status == 400 and "byte_size" in body["error"]
    status, body = http(server, "POST", f"/v2/systemsharedmemory/region/{name}/register",
                        {"key": "/../x", "byte_size": 64})
    assert status == 400 and "key" in body["error"]
    status, body = http(server, "POST", f"/v2/systemsharedmemory/region/{name}/register",
                        {"key": key, "byte_size": 128})
    assert status == 400  # past the object's end: FAILED_PRECONDITION
    status, _ = http(server, "GET", f"/v2/systemsharedmemory/region/{name}/register")
    assert status == 405
    status, _ = http(server, "GET", "/v2/systemsharedmemory/bogus")
    assert status == 404
    status, body = http(server, "POST", f"/v2/systemsharedmemory/region/{name}/register",
                        {"key": key, "byte_size": 64, "padding": "x" * 5000})
    assert status == 413 and "4096" in body["error"]


def test_infer_errors(client, region):
    rin, _, _ = region(16)
    inp = httpclient.InferInput("x", [8], "FP32")
    inp.set_shared_memory(rin, 32)
    with pytest.raises(InferenceServerException, match="pass its end|needs"):
        client.infer(SCALE_SHIFT, [inp], parameters={"alpha": 1.0, "beta": 0.0})
    missing = httpclient.InferInput("x", [4], "FP32")
    missing.set_shared_memory("no_such_region", 16)
    with pytest.raises(InferenceServerException, match="no_such_region"):
        client.infer(SCALE_SHIFT, [missing], parameters={"alpha": 1.0, "beta": 0.0})


def test_off_without_the_flag():
    s = ServerProcess("--ops", "myops::*", "--http-address", "127.0.0.1:0")
    try:
        status, body = http(s, "GET", "/v2/systemsharedmemory/status")
        assert status == 501 and "--allow-shared-memory" in body["error"]
        status, body = http(s, "POST", f"/v2/models/{SCALE_SHIFT}/infer", {
            "inputs": [{"name": "x", "shape": [4], "datatype": "FP32",
                        "parameters": {"shared_memory_region": "r",
                                       "shared_memory_byte_size": 16}}],
            "parameters": {"alpha": 1.0, "beta": 1.0}})
        assert status == 501 and "--allow-shared-memory" in body["error"]
        _, meta = http(s, "GET", "/v2")
        assert "system_shared_memory" not in meta["extensions"]
    finally:
        s.close()
