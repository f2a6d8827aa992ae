"""The Open Inference Protocol front end's life cycle and access: ServerReady and
ModelReady turn false while the server drains (liveness stays), and every RPC of
inference.GRPCInferenceService needs the same bearer token as myops.v1."""

from __future__ import annotations

import signal

import numpy as np
import pytest

import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException

from myops_testing import ServerProcess, poll


def test_not_ready_while_draining():
    # A long drain delay: the server keeps answering while health says NOT_SERVING.
    server = ServerProcess("--drain-delay", "600")
    client = grpcclient.InferenceServerClient(server.address)
    try:
        assert client.is_server_ready() and client.is_model_ready("myops::scale_shift")
        server.process.send_signal(signal.SIGTERM)
        assert poll(lambda: not client.is_server_ready(), timeout=60)
        assert client.is_server_live()
        assert not client.is_model_ready("myops::scale_shift")
    finally:
        client.close()
        server.close()


def test_bearer_token(tmp_path):
    token = tmp_path / "token"
    token.write_text("s3cret\n")
    server = ServerProcess("--auth-token-file", str(token))
    client = grpcclient.InferenceServerClient(server.address)
    x = grpcclient.InferInput("x", [2], "FP32")
    x.set_data_from_numpy(np.array([1, 2], dtype=np.float32))
    params = {"alpha": 2.0, "beta": 0.5}
    try:
        for call in (client.is_server_live, client.get_server_metadata,
                     lambda: client.get_model_metadata("myops::scale_shift"),
                     lambda: client.infer("myops::scale_shift", [x], parameters=params)):
            with pytest.raises(InferenceServerException) as raised:
                call()
            assert raised.value.status() == "StatusCode.UNAUTHENTICATED"
        good = {"authorization": "Bearer s3cret"}
        assert client.is_server_live(headers=good)
        out = client.infer("myops::scale_shift", [x], parameters=params, headers=good)
        np.testing.assert_array_equal(out.as_numpy("output__0"), [2.5, 4.5])
    finally:
        client.close()
        server.close()
