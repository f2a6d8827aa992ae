"""Tenants: a token file with one token per line makes each token its own client, and
shared memory regions belong to the tenant that registered them. Another tenant (any
other holder of a token) cannot list, read, write through or unregister them, on the
Open Inference Protocol's gRPC and REST front ends and on myops.v1, and two tenants may
use one region name each for their own region. Without tokens everyone is one tenant,
as before."""

from __future__ import annotations

import json
import os
import subprocess
import urllib.request
import uuid

import numpy as np
import pytest

import tritonclient.grpc as grpcclient
import tritonclient.utils.shared_memory as shm
from tritonclient.utils import InferenceServerException

from myops_testing import SERVER, ServerProcess

TOKENS = ("alpha-7f3c", "beta-91d2")
NAME = "input"  # the one region name both tenants use
N = 1024


def headers(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    token_file = tmp_path_factory.mktemp("tenants") / "tokens"
    token_file.write_text("\n".join(TOKENS) + "\n")
    s = ServerProcess("--auth-token-file", str(token_file), "--allow-shared-memory",
                      "--http-address", "127.0.0.1:0")
    yield s
    s.close()


@pytest.fixture
def grpc_client(server):
    c = grpcclient.InferenceServerClient(server.address)
    yield c
    for token in TOKENS:
        c.unregister_system_shared_memory(headers=headers(token))
    c.close()


@pytest.fixture
def region():
    """Makes a region holding `values` (float32): (its key, its handle); destroys them all
    after the test."""
    made = []

    def make(values: np.ndarray):
        key = f"/myops_tenant_{uuid.uuid4().hex[:12]}"
        handle = shm.create_shared_memory_region(key[1:], key, values.nbytes)
        shm.set_shared_memory_region(handle, [values])
        made.append(handle)
        return key, handle

    yield make
    for handle in made:
        shm.destroy_shared_memory_region(handle)


def infer_from_region(client, token: str, name: str = NAME):
    x = grpcclient.InferInput("x", [N], "FP32")
    x.set_shared_memory(name, N * 4)
    result = client.infer("myops::scale_shift", [x], parameters={"alpha": 2.0, "beta": 0.0},
                          headers=headers(token))
    return result.as_numpy("output__0")


def rest_status(server, token: str) -> list:
    request = urllib.request.Request(f"http://{server.http_address}/v2/systemsharedmemory/status",
                                     headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def status_names(client, token: str) -> list[str]:
    status = client.get_system_shared_memory_status(headers=headers(token), as_json=True)
    return sorted(status.get("regions", {}))


def test_a_tenants_regions_are_its_own(server, grpc_client, region):
    alpha, beta = TOKENS
    mine = np.arange(N, dtype=np.float32)
    key, handle = region(mine)
    grpc_client.register_system_shared_memory(NAME, key, N * 4, headers=headers(alpha))
    np.testing.assert_array_equal(infer_from_region(grpc_client, alpha), 2 * mine)

    # The other tenant sees no region, cannot read from it, nor write an output to it.
    assert status_names(grpc_client, beta) == []
    with pytest.raises(InferenceServerException, match="no shared memory region 'input'"):
        grpc_client.get_system_shared_memory_status(NAME, headers=headers(beta))
    with pytest.raises(InferenceServerException, match="no shared memory region 'input'"):
        infer_from_region(grpc_client, beta)
    x = grpcclient.InferInput("x", [N], "FP32")
    x.set_data_from_numpy(np.ones(N, np.float32))
    out = grpcclient.InferRequestedOutput("output__0")
    out.set_shared_memory(NAME, N * 4)
    with pytest.raises(InferenceServerException, match="no shared memory region 'input'"):
        grpc_client.infer("myops::scale_shift", [x], outputs=[out], headers=headers(beta),
                          parameters={"alpha": 1.0, "beta": 0.0})
    np.testing.assert_array_equal(shm.get_contents_as_numpy(handle, np.float32, [N]), mine)
    assert rest_status(server, beta) == []
    assert [r["name"] for r in rest_status(server, alpha)] == [NAME]

    # Its unregister (of the name, or of all) leaves the other tenant's region in place.
    grpc_client.unregister_system_shared_memory(NAME, headers=headers(beta))
    grpc_client.unregister_system_shared_memory(headers=headers(beta))
    assert status_names(grpc_client, alpha) == [NAME]
    np.testing.assert_array_equal(infer_from_region(grpc_client, alpha), 2 * mine)

    # Both tenants may use one name, each for its own region.
    theirs = np.full(N, 5.0, np.float32)
    grpc_client.register_system_shared_memory(NAME, region(theirs)[0], N * 4,
                                              headers=headers(beta))
    np.testing.assert_array_equal(infer_from_region(grpc_client, beta), 2 * theirs)
    np.testing.assert_array_equal(infer_from_region(grpc_client, alpha), 2 * mine)


def test_the_python_client_of_a_tenant_uses_its_own_regions(server):
    """myops_client registers its regions under its token and names them in myops.v1
    calls: the server resolves them in the same tenant's regions."""
    myops_client = pytest.importorskip("myops_client")
    x = np.random.default_rng(1).standard_normal(64 << 10).astype(np.float32)  # 256 KiB
    for token in TOKENS:
        with myops_client.Client(server.address, token=token, shared_memory="on") as client:
            np.testing.assert_array_equal(client.scale_shift(x, 2.0, 0.0), 2 * x)
            np.testing.assert_array_equal(client.call("myops::scale_shift", x, 2.0, 0.0), 2 * x)
            with client.stream("myops::scale_shift") as stream:
                np.testing.assert_array_equal(next(stream.map([(x, 2.0, 0.0)])), 2 * x)


@pytest.mark.skipif(bool(os.environ.get("MYOPS_TEST_LAUNCHER")),
                    reason="runs the server binary itself")
def test_a_token_file_that_repeats_a_token_stops_start_up(tmp_path):
    token_file = tmp_path / "tokens"
    token_file.write_text("first-secret\nsecond-secret\nfirst-secret\n")
    done = subprocess.run([str(SERVER), "--address", "127.0.0.1:0", "--devices", "cpu",
                           "--auth-token-file", str(token_file)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert "line 3 repeats an earlier token" in done.stderr
    assert "secret" not in done.stderr  # the file's path and line, never a token
