"""Hostile clients against the real myops-server binary: crafted and oversized messages,
streams that are never read, many connections, all at once. Each case asserts the
precise status, that the server stays up and serves a well-formed request afterwards,
and that its memory stays within the configured budget."""

from __future__ import annotations

import socket
import threading
import time

import grpc
import pytest

from myops_testing import quick_server
from myops_testing.hostile_wire import (INFO, call_status, channel, field, float32_request, gauge,
                                        metrics_port, request, rss_bytes, settles_to_zero, stream,
                                        tensor, unary)

MiB = 1 << 20
HEAD_CAP = "fields other than the tensor data take more than 65536 bytes"


def healthy(address: str) -> None:
    """A well-formed request succeeds with the right values."""
    ch = channel(address)
    code, details = call_status(ch, request([2], b"\x00\x00\x80\x3f" * 2))  # [1.0, 1.0]
    ch.close()
    assert code == grpc.StatusCode.OK, details


class RssSampler:
    """Samples a process's RSS in the background; `peak` is the highest seen."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak, self._stop = pid, 0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, rss_bytes(self.pid))
            time.sleep(0.01)

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.peak


def crafted_heads() -> dict[str, bytes]:
    valid = request([4], bytes(16))
    zeros = field(1, 2, tensor([], bytes(4)) + field(2, 2, bytes(16 * MiB)))
    return {
        "16 MiB of empty unknown groups": valid + b"\x33\x34" * (8 * MiB),
        "16 MiB of unknown varint fields": valid + b"\x30\x00" * (8 * MiB),
        "a 16 MiB packed shape of zeros": zeros,
        "a 1 MiB device string": valid + field(4, 2, b"x" * MiB),
    }


@pytest.mark.parametrize("name", list(crafted_heads()))
def test_crafted_heads_cost_no_more_than_their_size(name):
    server = quick_server("--max-message-bytes", str(64 * MiB))  # Fresh: RSS is its own.
    try:
        healthy(server.address)
        baseline = rss_bytes(server.process.pid)
        sampler = RssSampler(server.process.pid)
        ch = channel(server.address)
        for _ in range(2):
            code, details = call_status(ch, crafted_heads()[name])
            assert code == grpc.StatusCode.INVALID_ARGUMENT, details
            assert HEAD_CAP in details
        ch.close()
        growth = sampler.stop() - baseline
        # Before the cap, the 16 MiB cases cost 300-440 MiB each.
        assert growth < 100 * MiB, f"RSS grew {growth / MiB:.0f} MiB"
        healthy(server.address)
    finally:
        server.stop()


@pytest.fixture(scope="module")
def small():
    """A server with 1 MiB messages."""
    s = quick_server("--max-message-bytes", str(MiB))
    yield s
    s.stop()


@pytest.mark.parametrize("shape", [[2**40, 2**40, 0], [0, 2**62, 4]])
def test_empty_tensors_whose_sizes_overflow_are_invalid(small, shape):
    ch = channel(small.address)
    code, details = call_status(ch, request(shape, b""))
    assert code == grpc.StatusCode.INVALID_ARGUMENT, details
    assert "has more elements than fit in int64" in details
    ch.close()
    healthy(small.address)


def test_echoed_device_is_cut(small):
    ch = channel(small.address)
    code, details = call_status(ch, request([1], bytes(4), device=b"d" * 60000))
    assert code == grpc.StatusCode.INVALID_ARGUMENT, details
    assert '...(60000 bytes)" is not a valid device' in details
    assert len(details) < 1000
    ch.close()


def test_requests_just_under_the_message_limit_get_their_response(small):
    """A request just under --max-message-bytes is answered, unary and on a stream,
    although its response is a few bytes larger than the request."""
    payload = float32_request(MiB - 64)
    assert len(payload) <= MiB
    ch = channel(small.address)
    code, details = call_status(ch, payload)
    assert code == grpc.StatusCode.OK, details
    responses = list(stream(ch)(iter([payload] * 3), timeout=60))
    assert len(responses) == 3
    assert all(len(r) > MiB - 64 for r in responses)  # Results, not error messages.
    code, details = call_status(ch, float32_request(MiB + 4096))
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED, details
    ch.close()


BUDGET = 256 * MiB


def test_a_hostile_mix_stays_within_the_memory_budget():
    """Never-read streams, malformed and oversized messages and many connections at once,
    while a well-behaved client keeps calling: its requests succeed or get
    RESOURCE_EXHAUSTED, and the server's RSS stays below budget + 250 MiB."""
    server = quick_server("--max-inflight-bytes", str(BUDGET), "--max-message-bytes", str(64 * MiB),
                    "--cpu-workers", "2", "--metrics-address", "127.0.0.1:0")
    try:
        healthy(server.address)
        baseline = rss_bytes(server.process.pid)
        sampler = RssSampler(server.process.pid)
        errors: list[str] = []
        stop = threading.Event()

        def never_reading_stream(i: int) -> None:
            ch = channel(server.address)
            payload = float32_request(4 * MiB, request_id=i + 1)
            call = stream(ch)(iter([payload] * 40), timeout=120)
            stop.wait()
            call.cancel()
            ch.close()

        def malformed(i: int) -> None:
            ch = channel(server.address)
            for payload in crafted_heads().values():
                code, details = call_status(ch, payload)
                if code != grpc.StatusCode.INVALID_ARGUMENT:
                    errors.append(f"malformed: {code} {details}")
            code, details = call_status(ch, float32_request(64 * MiB + 4096))
            if code != grpc.StatusCode.RESOURCE_EXHAUSTED:
                errors.append(f"oversized: {code} {details}")
            ch.close()

        connections: list[grpc.Channel] = []

        def many_connections() -> None:
            for _ in range(200):
                ch = channel(server.address)
                try:
                    unary(ch, INFO)(b"", timeout=30)
                except grpc.RpcError as e:
                    errors.append(f"connection: {e.code()} {e.details()}")
                connections.append(ch)

        outcomes = {"OK": 0, "RESOURCE_EXHAUSTED": 0}

        def well_behaved() -> None:
            ch = channel(server.address)
            payload = float32_request(MiB)
            while not stop.is_set():
                code, details = call_status(ch, payload)
                if code.name in outcomes:
                    outcomes[code.name] += 1
                else:
                    errors.append(f"well-behaved: {code} {details}")
            ch.close()

        threads = [threading.Thread(target=never_reading_stream, args=(i,)) for i in range(6)]
        threads += [threading.Thread(target=malformed, args=(i,)) for i in range(2)]
        threads += [threading.Thread(target=many_connections), threading.Thread(target=well_behaved)]
        for t in threads:
            t.start()
        for t in threads[6:-1]:  # The malformed and connection floods run to their end.
            t.join()
        time.sleep(2)  # The streams and the well-behaved client keep going a while.
        stop.set()
        for t in threads:
            t.join()
        for ch in connections:
            ch.close()
        growth = sampler.stop() - baseline
        assert not errors, errors[:5]
        assert outcomes["OK"] > 0, outcomes
        # Clean runs grow 347-351 MiB (the heap in use peaks as high: gRPC's received
        # messages and the allocator's slack come on top of the budget); with the budget
        # broken RSS grew 683 MiB. The bound sits between, well clear of both.
        assert growth < BUDGET + 250 * MiB, f"RSS grew {growth / MiB:.0f} MiB"
        assert server.process.poll() is None
        healthy(server.address)
        # Nothing stays held once the clients are gone.
        port = metrics_port(server.log())
        for name in ("myops_memory_held_bytes", "myops_open_streams", "myops_inflight_requests"):
            assert settles_to_zero(port, name), name
    finally:
        server.stop()


MODEL_INFER = "/inference.GRPCInferenceService/ModelInfer"
CALL = "/myops.v1.Myops/Call"


def unary_status(address: str, method: str, payload: bytes) -> tuple[grpc.StatusCode, str]:
    """(status code, details) of one unary `method` with `payload` as its bytes."""
    ch = channel(address)
    try:
        unary(ch, method)(payload, timeout=60)
        return grpc.StatusCode.OK, ""
    except grpc.RpcError as e:
        return e.code(), e.details()
    finally:
        ch.close()


def packed_int64_zeros(n_bytes: int) -> bytes:
    """A ModelInferRequest whose one input holds `n_bytes` 1-byte varints of packed
    int64_contents: protobuf parses each byte into an 8-byte element."""
    contents = field(5, 2, field(3, 2, bytes(n_bytes)))
    return field(1, 2, b"myops::scale_shift") + field(5, 2, field(1, 2, b"x") + field(2, 2, b"INT64")
                                                      + contents)


def test_parses_are_reserved_for_what_they_take():
    """ModelInfer and Call reserve what protobuf's parse of the request can take before
    parsing it (kserve::InferParseReservation, CallParseReservation; measured in
    tests/server/frontends/grpc/parse_memory_test.cc): 8 bytes and more a byte for packed
    1-byte int64 varints, over 100 a byte for a head of empty inputs, 45 for a list of empty
    tensors. With a 3 MiB budget the three requests below need more than all of it and
    are refused before a byte is parsed; the reservation used to be twice the bytes
    received plus 7 per packed byte (under 3 MiB for each), and all three were parsed."""
    server = quick_server("--max-inflight-bytes", str(3 * MiB))
    whole_budget = "more than the server's whole memory budget"
    try:
        healthy(server.address)
        # 256 KiB of varints: 2 MiB of int64 elements, 4 with the arrays outgrown.
        code, details = unary_status(server.address, MODEL_INFER, packed_int64_zeros(256 << 10))
        assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and whole_budget in details, details
        # 64 KiB of 2-byte empty inputs: some 7 MiB of InferInputTensor objects.
        empty_inputs = field(1, 2, b"myops::scale_shift") + field(5, 2, b"") * 32000
        code, details = unary_status(server.address, MODEL_INFER, empty_inputs)
        assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and whole_budget in details, details
        # A Call with a Tensor[] of 32,000 empty tensors: some 3 MiB of Tensor objects.
        empty_tensors = field(1, 2, b"aten::cat") + field(
            2, 2, field(2, 2, field(8, 2, field(1, 2, b"") * 32000)))
        code, details = unary_status(server.address, CALL, empty_tensors)
        assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and whole_budget in details, details
        # Small requests are parsed as before (scale_shift then refuses int64 tensors or
        # serves them: either way not for memory).
        code, details = unary_status(server.address, MODEL_INFER, packed_int64_zeros(64))
        assert "budget" not in details, details
        healthy(server.address)
    finally:
        server.stop()


def test_a_trickled_rest_body_holds_only_what_arrived():
    """A REST body is granted by the budget as it arrives (ReadBodyInSteps), not from its
    Content-Length up front: a client that announces 16 MiB and sends 100 KiB holds about
    that (it used to hold the 32 MiB its body and parse were granted), and when it sends
    nothing more for --stall-timeout-ms it is cut off and what it held returns."""
    server = quick_server("--http-address", "127.0.0.1:0", "--max-inflight-bytes", str(64 * MiB),
                          "--metrics-address", "127.0.0.1:0", "--stall-timeout-ms", "1500")
    try:
        port = metrics_port(server.log())
        host, http_port = server.http_address.rsplit(":", 1)
        header = b'{"inputs":[{"name":"x","shape":[4194304],"datatype":"FP32","parameters":{"binary_data_size":16777216}}]}'
        length = len(header) + 16 * MiB
        sock = socket.create_connection((host, int(http_port)))
        sock.sendall(b"POST /v2/models/myops::scale_shift/infer HTTP/1.1\r\nHost: x\r\n"
                     b"Content-Type: application/octet-stream\r\n"
                     + f"Inference-Header-Content-Length: {len(header)}\r\n"
                       f"Content-Length: {length}\r\n\r\n".encode() + header + bytes(100 << 10))
        time.sleep(0.5)
        held = gauge(port, "myops_memory_held_bytes")
        assert 0 < held < MiB, f"{held / MiB:.1f} MiB held for 100 KiB sent"
        # Nothing more comes: cut off after the stall timeout, with the memory returned.
        sock.settimeout(10)
        started = time.monotonic()
        answer = sock.recv(4096)
        assert time.monotonic() - started < 8
        assert answer == b"" or answer.startswith(b"HTTP/1.1 400"), answer[:200]
        sock.close()
        assert settles_to_zero(port, "myops_memory_held_bytes")
        healthy(server.address)
    finally:
        server.stop()


def test_an_output_the_budget_cannot_hold_is_refused_before_it_is_allocated():
    """A 16-byte input asking aten::repeat for 1 GiB: the runtime sizes result 0 with the
    op's Meta kernel and asks the budget first (OpCall::grant_result), so the call fails
    with RESOURCE_EXHAUSTED and the server never allocates the gigabyte (it used to
    compute it, then refuse to send it)."""
    import numpy as np

    import myops_client

    server = quick_server("--ops", "myops::*,aten::repeat", "--max-inflight-bytes", str(64 * MiB))
    try:
        baseline = rss_bytes(server.process.pid)
        sampler = RssSampler(server.process.pid)
        with myops_client.Client(server.address, timeout=60.0) as c:
            with pytest.raises(myops_client.ResourceExhausted, match="memory budget"):
                c.ops.aten.repeat(np.ones(4, np.float32), [1 << 26])
            small = c.ops.aten.repeat(np.arange(4, dtype=np.float32), [3])
            assert small.tolist() == [0, 1, 2, 3] * 3
        growth = sampler.stop() - baseline
        assert growth < 256 * MiB, f"RSS grew {growth / MiB:.0f} MiB"
        healthy(server.address)
    finally:
        server.stop()


def test_an_op_that_allocates_past_the_budget_fails_before_it_allocates():
    """A creation op with no Meta kernel (myops_test::filled: a 39-byte request, a 2 GiB
    int64 result) cannot be sized before it runs: what it allocates is charged to its call
    as it allocates (runtime/torch/charged_allocator.h), so the allocation is refused
    with RESOURCE_EXHAUSTED before the gigabytes are taken (before, the op allocated and
    filled them, and the result was refused afterwards)."""
    import myops_client

    from myops_testing import BUILD

    test_ops = BUILD / "tests" / "server" / "libmyops_test_ops.so"
    server = quick_server("--load-library", str(test_ops), "--ops", "myops::*,myops_test::*",
                          "--max-inflight-bytes", str(64 * MiB))
    try:
        baseline = rss_bytes(server.process.pid)
        sampler = RssSampler(server.process.pid)
        with myops_client.Client(server.address, timeout=60.0) as c:
            with pytest.raises(myops_client.ResourceExhausted, match="memory budget"):
                c.ops.myops_test.filled([16384, 16384])
            small = c.ops.myops_test.filled([2, 3], fill=5)
            assert small.tolist() == [[5, 5, 5], [5, 5, 5]]
        growth = sampler.stop() - baseline
        assert growth < 256 * MiB, f"RSS grew {growth / MiB:.0f} MiB"
        healthy(server.address)
    finally:
        server.stop()
