"""The same calls, made with tritonclient against NVIDIA Triton (serving the operator
through the myops backend) and against myops-server's Open Inference Protocol front end,
give the same answers: what Triton's own front end adds on top of a model (its
extensions) is what myops-server must match for Triton's clients to work unchanged.
Differences by design: the model's name (Triton's repository names it "scale_shift",
myops-server names models after the operator); trace and log settings, which Triton
implements and myops-server refuses with a message saying what it has instead; load and
unload refusals worded for each server."""

from __future__ import annotations

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

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


def outcome(call):
    """("ok", result) or ("error", status) of a tritonclient call."""
    try:
        return "ok", call()
    except InferenceServerException as e:
        assert e.message(), "an error without a message"
        return "error", e.status()


def test_repository_index_and_control(triton, myops):
    for module, client, model in both(triton, myops):
        index = client.get_model_repository_index()
        entries = index if isinstance(index, list) else [
            {"name": m.name, "version": m.version, "state": m.state} for m in index.models]
        mine = [e for e in entries if e["name"] == model]
        assert mine == [{"name": model, "version": "1", "state": "READY"}], entries
        # Without explicit model control Triton refuses both: UNAVAILABLE (HTTP 503).
        refused = "StatusCode.UNAVAILABLE" if module is grpcclient else "503"
        assert outcome(lambda: client.load_model(model)) == ("error", refused)
        assert outcome(lambda: client.unload_model(model)) == ("error", refused)


def test_cuda_shared_memory_on_a_server_without_gpus(triton, myops):
    for module, client, _ in both(triton, myops):
        status = client.get_cuda_shared_memory_status()
        assert (list(status) if module is httpclient else list(status.regions)) == []
        assert outcome(lambda: client.unregister_cuda_shared_memory("r")) == ("ok", None)
        refused = "StatusCode.INVALID_ARGUMENT" if module is grpcclient else "400"
        kind, status = outcome(lambda: client.register_cuda_shared_memory("r", b"\0" * 64, 0, 64))
        assert (kind, status) == ("error", refused)


def test_trace_and_log_settings_are_refused_with_a_reason(myops):
    for module, client in ((grpcclient, grpcclient.InferenceServerClient(myops.address)),
                           (httpclient, httpclient.InferenceServerClient(myops.http_address))):
        unimplemented = "StatusCode.UNIMPLEMENTED" if module is grpcclient else "501"
        for call in (client.get_trace_settings, client.get_log_settings,
                     lambda: client.update_log_settings(settings={"log_verbose_level": 1})):
            assert outcome(call) == ("error", unimplemented)


def test_compressed_requests_and_responses_as_on_triton(triton, myops):
    x = np.arange(-20, 20, dtype=np.float32)
    answers = []
    for module, client, model in both(triton, myops):
        if module is not httpclient:
            continue
        for algorithm in ("gzip", "deflate"):
            inp = httpclient.InferInput("x", list(x.shape), "FP32")
            inp.set_data_from_numpy(x)
            r = client.infer(model, [inp], parameters={"alpha": 3.0, "beta": -1.0},
                             request_compression_algorithm=algorithm,
                             response_compression_algorithm=algorithm)
            answers.append(r.as_numpy("output__0"))
    assert len(answers) == 4
    for a in answers:
        np.testing.assert_array_equal(a, answers[0])
    np.testing.assert_array_equal(answers[0], 3 * x - 1)
