"""The same calls, made with tritonclient against NVIDIA Triton (serving the operator
through the myops backend) and against myops-server's Open Inference Protocol front end,
give the same answers: what Triton's own front end adds on top of a model (its
extensions) is what myops-server must match for Triton's clients to work unchanged.
Differences by design: the model's name (Triton's repository names it "scale_shift",
myops-server names models after the operator)."""

from __future__ import annotations

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

from myops_testing import ServerProcess


@pytest.fixture(scope="module")
def myops():
    server = ServerProcess("--http-address", "127.0.0.1:0")
    yield server
    server.close()


def both(triton, myops):
    """(client module, client, model name) for Triton and for myops-server, gRPC and HTTP."""
    return [
        (grpcclient, grpcclient.InferenceServerClient(triton.grpc_url), "scale_shift"),
        (grpcclient, grpcclient.InferenceServerClient(myops.address), "myops::scale_shift"),
        (httpclient, httpclient.InferenceServerClient(triton.http_url), "scale_shift"),
        (httpclient, httpclient.InferenceServerClient(myops.http_address), "myops::scale_shift"),
    ]


def classify(module, client, model, x, k):
    inp = module.InferInput("x", list(x.shape), "FP32")
    inp.set_data_from_numpy(x)
    out = module.InferRequestedOutput("output__0", class_count=k)
    r = client.infer(model, [inp], outputs=[out], parameters={"alpha": -1.5, "beta": 0.25})
    return r.as_numpy("output__0"), r.get_output("output__0")


def test_classification_gives_tritons_top_classes(triton, myops):
    x = np.random.default_rng(11).standard_normal(40).astype(np.float32)
    for k in (1, 5, 100):  # 100: more than there are elements
        answers = [classify(m, c, model, x, k) for m, c, model in both(triton, myops)]
        reference, _ = answers[0]
        assert reference.dtype == np.object_ and reference.shape == (min(k, x.size),)
        for got, meta in answers[1:]:
            np.testing.assert_array_equal(got, reference)
            datatype = meta["datatype"] if isinstance(meta, dict) else meta.datatype
            assert datatype == "BYTES"
    # "value:index", largest first: the value as C++'s std::to_string prints it.
    y = (x.astype(np.float64) * -1.5 + 0.25).astype(np.float32)  # exact, rounded once (fma)
    top = np.argsort(-y, kind="stable")[:3]
    got, _ = classify(grpcclient, grpcclient.InferenceServerClient(myops.address),
                      "myops::scale_shift", x, 3)
    assert [g.decode() for g in got] == [f"{float(y[i]):f}:{i}" for i in top]


def test_server_metadata_lists_the_classification_extension(triton, myops):
    for _, client, _ in both(triton, myops):
        meta = client.get_server_metadata()
        extensions = meta["extensions"] if isinstance(meta, dict) else meta.extensions
        assert "classification" in extensions, extensions
