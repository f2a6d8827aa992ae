"""The same calls, made with tritonclient against NVIDIA Triton (serving the operator
through the myops backend) and against myops-server's Open Inference Protocol front end,
give the same answers: what Triton's own front end adds on top of a model (its
extensions) is what myops-server must match for Triton's clients to work unchanged.
Differences by design: the model's name (Triton's repository names it "scale_shift",
myops-server names models after the operator); trace and log settings, which Triton
implements and myops-server refuses with a message saying what it has instead; load and
unload refusals worded for each server; FP64 in JSON, which Triton writes with too few
digits to round-trip and myops-server writes exactly; FP16 in JSON, which Triton refuses
and myops-server takes."""

from __future__ import annotations

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException, np_to_triton_dtype

from conftest import infer_through_shared_memory
from myops_testing import ServerProcess


@pytest.fixture(scope="module")
def myops():
    server = ServerProcess("--http-address", "127.0.0.1:0", "--ops", "myops::*,aten::topk",
                           "--allow-shared-memory")
    yield server
    server.close()


def both(triton, myops, triton_model="scale_shift", myops_model="myops::scale_shift"):
    """(client module, client, model name) for Triton and for myops-server, gRPC and HTTP."""
    return [
        (grpcclient, grpcclient.InferenceServerClient(triton.grpc_url), triton_model),
        (grpcclient, grpcclient.InferenceServerClient(myops.address), myops_model),
        (httpclient, httpclient.InferenceServerClient(triton.http_url), triton_model),
        (httpclient, httpclient.InferenceServerClient(myops.http_address), myops_model),
    ]


def infer(module, client, model, inputs, parameters=None, outputs=None, binary=True, **kwargs):
    ins = []
    for name, array in inputs.items():
        t = module.InferInput(name, list(array.shape), np_to_triton_dtype(array.dtype))
        if module is httpclient:
            t.set_data_from_numpy(array, binary_data=binary)
        else:
            t.set_data_from_numpy(array)
        ins.append(t)
    outs = None
    if outputs is not None:
        outs = [module.InferRequestedOutput(o, **({"binary_data": binary}
                                                  if module is httpclient else {}))
                for o in outputs]
    return client.infer(model, ins, outputs=outs, parameters=parameters, **kwargs)


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


def test_health_and_readiness(triton, myops):
    for i, (_, client, model) in enumerate(both(triton, myops)):
        assert client.is_server_live()
        # (Triton's repository here holds two models that fail to load on purpose: with
        # strict readiness Triton is then not ready as a whole.)
        assert client.is_server_ready() == (i % 2 == 1)
        assert client.is_model_ready(model)
        assert not client.is_model_ready("no_such_model")


def test_every_datatype_scale_shift_computes_gives_the_same_values(triton, myops):
    rng = np.random.default_rng(12)
    for dtype, triton_model in ((np.float32, "scale_shift"), (np.float64, "scale_shift_fp64"),
                                (np.float16, "scale_shift_fp16")):
        x = rng.standard_normal(64).astype(dtype)
        reference = None
        # By design: Triton refuses FP16 in JSON ("use the binary data format"); myops
        # takes it. FP16 goes as binary data only here.
        for binary in (True,) if dtype == np.float16 else (True, False):
            for i, (module, client, model) in enumerate(both(triton, myops, triton_model)):
                r = infer(module, client, model, {"x": x}, {"alpha": 1.25, "beta": -0.5},
                          binary=binary)
                got = r.as_numpy("output__0")
                assert got.dtype == dtype
                reference = got if reference is None else reference
                if i == 2 and not binary and dtype == np.float64:
                    # By design: Triton's JSON writes FP64 with about 15 significant digits,
                    # fewer than a round trip needs (measured: 4 of these 64 values differ,
                    # by up to 2e-15 relative); myops's JSON is exact.
                    np.testing.assert_allclose(got, reference, rtol=5e-15, atol=0)
                else:
                    np.testing.assert_array_equal(got, reference)


def test_request_ids_come_back(triton, myops):
    for module, client, model in both(triton, myops):
        r = infer(module, client, model, {"x": np.ones(2, np.float32)},
                  {"alpha": 1.0, "beta": 0.0}, request_id="id-42")
        response = r.get_response()
        assert (response["id"] if module is httpclient else response.id) == "id-42"


def test_output_selection_of_a_two_output_op(triton, myops):
    x = np.random.default_rng(13).standard_normal((3, 20)).astype(np.float32)
    answers = []
    for module, client, model in both(triton, myops, "topk", "aten::topk"):
        r = infer(module, client, model, {"self": x}, {"k": 4}, outputs=["indices"])
        assert r.as_numpy("values") is None
        answers.append(r.as_numpy("indices"))
    for a in answers:
        assert a.dtype == np.int64
        np.testing.assert_array_equal(a, answers[0])


def test_errors_have_the_same_status_and_message(triton, myops):
    """The operator's own refusals (a missing argument, a kernel's check) reach Triton's
    clients through either server with the same status and message."""
    for module, client, model in both(triton, myops):
        kind, status = outcome(lambda: infer(module, client, model,
                                             {"x": np.ones(2, np.float32)}, {"alpha": 1.0}))
        assert (kind, status) == ("error", "StatusCode.INVALID_ARGUMENT"
                                  if module is grpcclient else "400")
    messages = []
    for module, client, model in both(triton, myops):
        try:
            infer(module, client, model, {"x": np.ones(2, np.float32)}, {"alpha": 1.0})
        except InferenceServerException as e:
            messages.append(e.message())
    assert len(set(messages)) == 1, messages
    assert "missing required argument 'beta'" in messages[0]


def test_statistics_count_inferences(triton, myops):
    for module, client, model in both(triton, myops):
        def count():
            stats = client.get_inference_statistics(model)
            stats = stats if isinstance(stats, dict) else {
                "model_stats": [{"inference_count": s.inference_count} for s in stats.model_stats]}
            return int(stats["model_stats"][0]["inference_count"])
        before = count()
        for _ in range(2):
            infer(module, client, model, {"x": np.ones(2, np.float32)}, {"alpha": 1.0, "beta": 0.0})
        assert count() - before == 2


def test_system_shared_memory_inputs_and_outputs(triton, myops):
    x = np.random.default_rng(14).standard_normal(256).astype(np.float32)
    answers = [infer_through_shared_memory(module, client, model, x, 2.0, 0.5)
               for module, client, model in both(triton, myops)]
    for a in answers:
        np.testing.assert_array_equal(a, answers[0])


def test_streams_answer_each_request_once_marked_final(triton, myops):
    import grpc
    from tritonclient.grpc import service_pb2, service_pb2_grpc

    def request(model, rid, beta=True, empty_final=False):
        r = service_pb2.ModelInferRequest(model_name=model, id=rid)
        r.inputs.add(name="x", datatype="FP32", shape=[2])
        r.raw_input_contents.append(np.array([1, 2], np.float32).tobytes())
        r.parameters["alpha"].double_param = 2.0
        if beta:
            r.parameters["beta"].double_param = 1.0
        if empty_final:
            r.parameters["triton_enable_empty_final_response"].bool_param = True
        return r

    seen = []
    for address, model in ((triton.grpc_url, "scale_shift"), (myops.address, "myops::scale_shift")):
        with grpc.insecure_channel(address) as channel:
            stub = service_pb2_grpc.GRPCInferenceServiceStub(channel)
            requests = [request(model, "a"), request(model, "b", empty_final=True),
                        request(model, "bad", beta=False)]
            responses = list(stub.ModelStreamInfer(iter(requests), timeout=60))
        seen.append(sorted(
            (r.infer_response.id, bool(r.error_message),
             r.infer_response.parameters["triton_final_response"].bool_param,
             tuple(np.frombuffer(c, np.float32).tolist() for c in r.infer_response.raw_output_contents))
            for r in responses))
    assert seen[0] == seen[1], seen
    assert [s[0] for s in seen[0]] == ["a", "b", "bad"]
