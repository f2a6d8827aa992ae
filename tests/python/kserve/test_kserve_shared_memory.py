"""Triton's system shared memory extension against the real server, with the clients
users have: tritonclient.utils.shared_memory creates and fills POSIX shared memory
regions, tritonclient.grpc registers them and names them in ModelInfer (inputs and
outputs). Covers values (float inputs read in place, integer inputs copied, outputs
written in place or copied), Status/Unregister, the precise errors for hostile or
mistaken references, regions truncated or unlinked by their client, and that the
feature is off (UNIMPLEMENTED, not advertised) without --allow-shared-memory."""

from __future__ import annotations

import os
import threading
import uuid

import numpy as np
import pytest

import tritonclient.grpc as grpcclient
import tritonclient.utils.shared_memory as shm
from tritonclient.utils import InferenceServerException

from myops_testing import BUILD, ServerProcess, poll

TEST_OPS = BUILD / "tests" / "server" / "libmyops_test_ops.so"
SCALE_SHIFT = "myops::scale_shift"


@pytest.fixture(scope="module")
def server():
    # A budget and message limit far below the 64 MiB tensors of the in-place test; an
    # element limit above the 2 GiB tensor's (region tensors obey --max-elements too).
    s = ServerProcess("--load-library", str(TEST_OPS), "--ops", "myops::*,myops_test::*",
                      "--allow-shared-memory", "--max-inflight-bytes", str(48 << 20),
                      "--max-message-bytes", str(4 << 20), "--shared-memory-max-regions", "8",
                      "--max-elements", str(1 << 30))
    yield s
    s.close()


@pytest.fixture(scope="module")
def client(server):
    c = grpcclient.InferenceServerClient(server.address)
    yield c
    c.close()


class Regions:
    """Regions this test creates and registers; all unregistered and destroyed after."""

    def __init__(self, client):
        self.client = client
        self.handles = {}

    def make(self, nbytes: int, register: bool = True, name: str | None = None):
        name = name or f"r{uuid.uuid4().hex[:12]}"
        key = f"/myops_test_{name}"
        handle = shm.create_shared_memory_region(name, key, nbytes)
        self.handles[name] = (handle, key)
        if register:
            self.client.register_system_shared_memory(name, key, nbytes)
        return name, key, handle

    def close(self):
        try:
            self.client.unregister_system_shared_memory()
        finally:
            for handle, _ in self.handles.values():
                try:
                    shm.destroy_shared_memory_region(handle)
                except FileNotFoundError:  # the test unlinked it itself
                    pass


@pytest.fixture
def regions(client):
    r = Regions(client)
    yield r
    r.close()


def scale_shift(client, x_in, y_out=None, alpha=2.0, beta=1.0, outputs_name="output__0"):
    """Calls scale_shift with input `x_in` (an InferInput) and output y_out (region name
    and size, or None: inline)."""
    out = grpcclient.InferRequestedOutput(outputs_name)
    if y_out is not None:
        out.set_shared_memory(*y_out)
    return client.infer(SCALE_SHIFT, [x_in], outputs=[out],
                        parameters={"alpha": alpha, "beta": beta})


def shm_input(name, shape, datatype, region, nbytes, offset=0):
    inp = grpcclient.InferInput(name, list(shape), datatype)
    inp.set_shared_memory(region, nbytes, offset)
    return inp


def test_server_metadata_advertises_the_extension(client):
    assert "system_shared_memory" in client.get_server_metadata().extensions


def test_input_and_output_in_shared_memory(client, regions):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    rin, _, hin = regions.make(x.nbytes)
    rout, _, hout = regions.make(x.nbytes)
    shm.set_shared_memory_region(hin, [x])
    result = scale_shift(client, shm_input("x", x.shape, "FP32", rin, x.nbytes),
                         (rout, x.nbytes))
    out = result.get_output("output__0")
    assert list(out.shape) == [3, 4] and out.datatype == "FP32"
    # The response carries no bytes for it: one empty raw_output_contents entry.
    assert list(result.get_response().raw_output_contents) == [b""]
    y = shm.get_contents_as_numpy(hout, np.float32, [3, 4])
    np.testing.assert_array_equal(y, 2 * x + 1)
    # The input region is the client's, read only: unchanged.
    np.testing.assert_array_equal(shm.get_contents_as_numpy(hin, np.float32, [3, 4]), x)


def test_offsets_inside_one_region(client, regions):
    x = np.linspace(-1, 1, 256, dtype=np.float32)
    region, _, handle = regions.make(4096)
    shm.set_shared_memory_region(handle, [x], offset=1024)
    out = grpcclient.InferRequestedOutput("output__0")
    out.set_shared_memory(region, x.nbytes, offset=2048)
    client.infer(SCALE_SHIFT, [shm_input("x", x.shape, "FP32", region, x.nbytes, 1024)],
                 outputs=[out], parameters={"alpha": -3.0, "beta": 0.5})
    y = shm.get_contents_as_numpy(handle, np.float32, [256], offset=2048)
    np.testing.assert_allclose(y, -3 * x + 0.5, rtol=1e-6, atol=1e-6)


def test_offsets_misaligned_for_the_dtype(client, regions):
    # Offsets 1 and 3 put float32 (and float64) elements at odd addresses: the input is
    # copied aligned before a kernel loads it, and the result is computed elsewhere and
    # copied into the output's bytes (kernels load and store whole elements).
    for dtype, datatype in ((np.float32, "FP32"), (np.float64, "FP64")):
        x = np.linspace(-4, 4, 1 << 15, dtype=dtype)  # 128 or 256 KiB: past the in-place size
        region, _, handle = regions.make(2 * x.nbytes + 64)
        shm.set_shared_memory_region(handle, [x], offset=1)
        out = grpcclient.InferRequestedOutput("output__0")
        out.set_shared_memory(region, x.nbytes, offset=x.nbytes + 3)
        client.infer(SCALE_SHIFT, [shm_input("x", x.shape, datatype, region, x.nbytes, 1)],
                     outputs=[out], parameters={"alpha": 3.0, "beta": -1.0})
        y = shm.get_contents_as_numpy(handle, dtype, x.shape, offset=x.nbytes + 3)
        np.testing.assert_allclose(y, 3 * x - 1, rtol=1e-6, atol=1e-6)  # the kernel may fuse
        np.testing.assert_array_equal(shm.get_contents_as_numpy(handle, dtype, x.shape, offset=1), x)


def test_shared_memory_input_inline_output_and_the_reverse(client, regions):
    x = np.random.default_rng(1).standard_normal((5, 7)).astype(np.float32)
    rin, _, hin = regions.make(x.nbytes)
    shm.set_shared_memory_region(hin, [x])
    inline_out = scale_shift(client, shm_input("x", x.shape, "FP32", rin, x.nbytes))
    np.testing.assert_allclose(inline_out.as_numpy("output__0"), 2 * x + 1, rtol=1e-6)

    rout, _, hout = regions.make(x.nbytes)
    inline_in = grpcclient.InferInput("x", list(x.shape), "FP32")
    inline_in.set_data_from_numpy(x)
    scale_shift(client, inline_in, (rout, x.nbytes), alpha=0.5, beta=-1.0)
    np.testing.assert_allclose(shm.get_contents_as_numpy(hout, np.float32, x.shape),
                               0.5 * x - 1, rtol=1e-6)


def test_mixed_inline_and_shared_memory_inputs_with_integer_tensors(client, regions):
    a = np.arange(10, dtype=np.int64)
    b = np.arange(10, dtype=np.int64) * 100
    rb, _, hb = regions.make(b.nbytes)
    shm.set_shared_memory_region(hb, [b])
    ia = grpcclient.InferInput("a", [10], "INT64")
    ia.set_data_from_numpy(a)
    ib = shm_input("b", [10], "INT64", rb, b.nbytes)
    # raw_input_contents holds one entry (a's): b's bytes are in its region.
    result = client.infer("myops_test::add3", [ia, ib])
    np.testing.assert_array_equal(result.as_numpy("output__0"), a + b)


def test_several_outputs_one_in_shared_memory(client, regions):
    x = np.array([3.0, -2.0, 7.5, 0.25], dtype=np.float32)
    rin, _, hin = regions.make(x.nbytes)
    rmax, _, hmax = regions.make(4)
    shm.set_shared_memory_region(hin, [x])
    want_min = grpcclient.InferRequestedOutput("min")
    want_max = grpcclient.InferRequestedOutput("max")
    want_max.set_shared_memory(rmax, 4)
    result = client.infer("myops_test::minmax", [shm_input("x", x.shape, "FP32", rin, x.nbytes)],
                          outputs=[want_max, want_min])
    assert result.as_numpy("min") == pytest.approx(-2.0)
    assert shm.get_contents_as_numpy(hmax, np.float32, [])[()] == pytest.approx(7.5)


def test_large_tensor_beyond_message_and_budget_is_computed_in_place(client, regions):
    # 64 MiB in and out: over --max-message-bytes (4 MiB) and --max-inflight-bytes
    # (48 MiB). It succeeds only because the input is read in place and scale_shift.out
    # computes straight into the output region (a result in server memory would not fit
    # the budget).
    n = 16 << 20
    x = np.full(n, 1.5, dtype=np.float32)
    rin, _, hin = regions.make(x.nbytes)
    rout, _, hout = regions.make(x.nbytes)
    shm.set_shared_memory_region(hin, [x])
    scale_shift(client, shm_input("x", [n], "FP32", rin, x.nbytes), (rout, x.nbytes),
                alpha=2.0, beta=0.5)
    y = shm.get_contents_as_numpy(hout, np.float32, [n])
    assert y[0] == 3.5 and y[-1] == 3.5 and float(y.sum()) == pytest.approx(3.5 * n)


def test_tensor_beyond_2_gib(client, regions):
    # No gRPC message can carry it (2 GiB at most); through regions the limits are the
    # region's size and --max-elements.
    n = (2**31 + 4096) // 4
    rin, _, hin = regions.make(n * 4)
    rout, _, hout = regions.make(n * 4)
    x = shm.get_contents_as_numpy(hin, np.float32, [n])
    x[:] = 0.25
    x[-1] = 8.0
    scale_shift(client, shm_input("x", [n], "FP32", rin, n * 4), (rout, n * 4),
                alpha=4.0, beta=-1.0)
    y = shm.get_contents_as_numpy(hout, np.float32, [n])
    assert y[0] == 0.0 and y[n // 2] == 0.0 and y[-1] == 31.0
    assert int(np.count_nonzero(y[:-1])) == 0


def test_status_and_unregister(client, regions):
    a, key_a, _ = regions.make(64)
    b, _, _ = regions.make(128)
    status = client.get_system_shared_memory_status(as_json=True)["regions"]
    assert status[a]["key"] == key_a and int(status[a]["byte_size"]) == 64
    assert int(status[b]["byte_size"]) == 128
    one = client.get_system_shared_memory_status(region_name=b, as_json=True)["regions"]
    assert list(one) == [b]
    client.unregister_system_shared_memory(a)
    assert a not in client.get_system_shared_memory_status(as_json=True).get("regions", {})
    with pytest.raises(InferenceServerException, match="no shared memory region"):
        client.get_system_shared_memory_status(region_name=a)
    client.unregister_system_shared_memory()  # all
    assert not client.get_system_shared_memory_status(as_json=True).get("regions")


def test_unregistering_a_region_that_is_not_registered_succeeds_as_on_triton(client, regions):
    name, _, _ = regions.make(64)
    client.unregister_system_shared_memory(name)
    client.unregister_system_shared_memory(name)  # again: no error, as Triton answers
    client.unregister_system_shared_memory("never-registered")
    with pytest.raises(InferenceServerException, match="no shared memory region"):
        client.get_system_shared_memory_status(region_name=name)  # status still says so


def test_unregister_unmaps_the_region(client, regions, server):
    name, key, _ = regions.make(8192)
    maps = f"/proc/{server.pid}/maps"
    assert f"/dev/shm{key}" in open(maps).read()
    client.unregister_system_shared_memory(name)
    assert f"/dev/shm{key}" not in open(maps).read()


@pytest.mark.parametrize("key, message", [
    ("/../etc/passwd", "key"),
    ("/", "key"),
    ("/" + "k" * 300, "key"),
    ("/a/b", "key"),
])
def test_register_refuses_malformed_keys(client, key, message):
    with pytest.raises(InferenceServerException, match=message) as e:
        client.register_system_shared_memory("bad", key, 16)
    assert e.value.status() == "StatusCode.INVALID_ARGUMENT"


def test_register_errors(client, regions):
    name, key, _ = regions.make(4096)
    with pytest.raises(InferenceServerException) as e:
        client.register_system_shared_memory(name, key, 4096)
    assert e.value.status() == "StatusCode.ALREADY_EXISTS"
    with pytest.raises(InferenceServerException) as e:
        client.register_system_shared_memory("other", key, 8192)  # past the object's end
    assert e.value.status() == "StatusCode.FAILED_PRECONDITION"
    with pytest.raises(InferenceServerException) as e:
        client.register_system_shared_memory("ghost", "/myops_test_missing_object", 16)
    assert e.value.status() == "StatusCode.NOT_FOUND"


def test_register_limits_the_number_of_regions(client, regions):
    for _ in range(8):
        regions.make(64)
    with pytest.raises(InferenceServerException) as e:
        regions.make(64)
    assert e.value.status() == "StatusCode.RESOURCE_EXHAUSTED"


def infer_error(client, inputs, outputs=None):
    with pytest.raises(InferenceServerException) as e:
        client.infer(SCALE_SHIFT, inputs, outputs=outputs,
                     parameters={"alpha": 1.0, "beta": 0.0})
    return e.value


def test_infer_errors_name_the_problem(client, regions):
    region, _, _ = regions.make(64)
    err = infer_error(client, [shm_input("x", [16], "FP32", "nope", 64)])
    assert err.status() == "StatusCode.NOT_FOUND" and "nope" in err.message()
    err = infer_error(client, [shm_input("x", [16], "FP32", region, 64, offset=32)])
    assert err.status() == "StatusCode.INVALID_ARGUMENT" and "pass its end" in err.message()
    err = infer_error(client, [shm_input("x", [8], "FP32", region, 64)])
    assert err.status() == "StatusCode.INVALID_ARGUMENT" and "needs 32 bytes" in err.message()
    err = infer_error(client, [shm_input("x", [16], "FP32", region, 2**63 - 1, offset=16)])
    assert err.status() == "StatusCode.INVALID_ARGUMENT"
    small, _, _ = regions.make(16)
    out = grpcclient.InferRequestedOutput("output__0")
    out.set_shared_memory(small, 16)
    err = infer_error(client, [shm_input("x", [16], "FP32", region, 64)], [out])
    assert err.status() == "StatusCode.INVALID_ARGUMENT" and "output__0" in err.message()


def test_whole_list_output_is_refused_and_elements_work(client, regions):
    x = np.arange(6, dtype=np.float32)
    inp = grpcclient.InferInput("x", [6], "FP32")
    inp.set_data_from_numpy(x)
    n = grpcclient.InferInput("n", [1], "INT64")
    n.set_data_from_numpy(np.array([3], dtype=np.int64))
    region, _, handle = regions.make(64)
    whole = grpcclient.InferRequestedOutput("output__0")
    whole.set_shared_memory(region, 64)
    with pytest.raises(InferenceServerException, match="output__0__0") as e:
        client.infer("myops_test::chunks", [inp, n], outputs=[whole])
    assert e.value.status() == "StatusCode.INVALID_ARGUMENT"
    second = grpcclient.InferRequestedOutput("output__0__1")
    second.set_shared_memory(region, 8)
    client.infer("myops_test::chunks", [inp, n], outputs=[second])
    np.testing.assert_array_equal(shm.get_contents_as_numpy(handle, np.float32, [2]), [2, 3])


def test_truncated_region_fails_the_call_not_the_server(client, regions):
    x = np.ones(1024, dtype=np.float32)
    region, key, handle = regions.make(x.nbytes)
    shm.set_shared_memory_region(handle, [x])
    fd = os.open(f"/dev/shm{key}", os.O_RDWR)
    try:
        os.ftruncate(fd, 0)
    finally:
        os.close(fd)
    err = infer_error(client, [shm_input("x", [1024], "FP32", region, x.nbytes)])
    assert err.status() == "StatusCode.FAILED_PRECONDITION" and "truncated" in err.message()
    assert client.is_server_live()
    client.unregister_system_shared_memory(region)


def test_unlinked_region_stays_usable_until_unregistered(client, regions):
    # Unlinking removes the name; the server's mapping keeps the memory (POSIX semantics).
    x = np.arange(8, dtype=np.float32)
    region, key, handle = regions.make(x.nbytes)
    shm.set_shared_memory_region(handle, [x])
    os.unlink(f"/dev/shm{key}")
    result = scale_shift(client, shm_input("x", [8], "FP32", region, x.nbytes))
    np.testing.assert_array_equal(result.as_numpy("output__0"), 2 * x + 1)


def test_stream_infer_with_shared_memory(client, regions):
    import queue
    x = np.arange(32, dtype=np.float32)
    rin, _, hin = regions.make(x.nbytes)
    rout, _, hout = regions.make(x.nbytes)
    shm.set_shared_memory_region(hin, [x])
    results: queue.Queue = queue.Queue()
    client.start_stream(callback=lambda result, error: results.put((result, error)))
    try:
        out = grpcclient.InferRequestedOutput("output__0")
        out.set_shared_memory(rout, x.nbytes)
        client.async_stream_infer(SCALE_SHIFT, [shm_input("x", [32], "FP32", rin, x.nbytes)],
                                  outputs=[out], parameters={"alpha": 3.0, "beta": 0.0})
        result, error = results.get(timeout=60)
    finally:
        client.stop_stream()
    assert error is None
    np.testing.assert_array_equal(shm.get_contents_as_numpy(hout, np.float32, [32]), 3 * x)


def test_off_without_the_flag(tmp_path):
    s = ServerProcess("--ops", "myops::*")
    try:
        c = grpcclient.InferenceServerClient(s.address)
        assert "system_shared_memory" not in c.get_server_metadata().extensions
        with pytest.raises(InferenceServerException, match="--allow-shared-memory") as e:
            c.register_system_shared_memory("r", "/myops_test_off", 16)
        assert e.value.status() == "StatusCode.UNIMPLEMENTED"
        with pytest.raises(InferenceServerException, match="--allow-shared-memory") as e:
            c.infer(SCALE_SHIFT, [shm_input("x", [4], "FP32", "r", 16)],
                    parameters={"alpha": 1.0, "beta": 0.0})
        assert e.value.status() == "StatusCode.UNIMPLEMENTED"
        c.close()
    finally:
        s.close()


def gated_call(client, region, x, gate):
    """Starts myops_test::gated_copy of `x` in `region` on a thread; returns (thread,
    outcome) once the server is inside the op (the gate's `started` file exists)."""
    outcome = {}

    def call():
        try:
            result = client.infer("myops_test::gated_copy",
                                  [shm_input("x", x.shape, "FP32", region, x.nbytes)],
                                  parameters={"dir": str(gate)})
            outcome["y"] = result.as_numpy("output__0")
        except InferenceServerException as e:
            outcome["error"] = e
    thread = threading.Thread(target=call)
    thread.start()
    assert poll(lambda: (gate / "started").exists() or outcome, timeout=60)
    assert not outcome, outcome  # the call ended before reaching the gate
    return thread, outcome


def test_a_region_unregistered_while_a_call_reads_it_serves_that_call(client, regions, tmp_path):
    # The call holds the region's mapping: unregistering removes the name at once (no
    # new call can use it) while the call in flight still reads the bytes it was given.
    x = np.arange(4096, dtype=np.float32)
    region, _, handle = regions.make(x.nbytes)
    shm.set_shared_memory_region(handle, [x])
    thread, outcome = gated_call(client, region, x, tmp_path)
    client.unregister_system_shared_memory(region)
    assert region not in [r["name"] for r in client.get_system_shared_memory_status(as_json=True)
                          .get("regions", {}).values()]
    (tmp_path / "go").touch()
    thread.join(timeout=60)
    assert "error" not in outcome, outcome
    np.testing.assert_array_equal(outcome["y"], x)
    assert client.is_server_live()


def test_a_region_truncated_while_a_call_reads_it_fails_that_call_only(client, regions, tmp_path):
    # The client shrinks its object under the call: the op's read faults (SIGBUS), the
    # bus guard maps a zero page there and the call fails with FAILED_PRECONDITION; the
    # server lives on and serves the next call.
    x = np.ones(1 << 16, dtype=np.float32)  # 256 KiB: 64 pages to fault on
    region, key, handle = regions.make(x.nbytes)
    shm.set_shared_memory_region(handle, [x])
    thread, outcome = gated_call(client, region, x, tmp_path)
    fd = os.open(f"/dev/shm{key}", os.O_RDWR)
    try:
        os.ftruncate(fd, 0)
    finally:
        os.close(fd)
    (tmp_path / "go").touch()
    thread.join(timeout=60)
    assert "error" in outcome, outcome
    err = outcome["error"]
    assert err.status() == "StatusCode.FAILED_PRECONDITION", err
    assert "truncated" in err.message(), err.message()
    assert client.is_server_live()
    y = np.full(8, 2.0, dtype=np.float32)
    inp = grpcclient.InferInput("x", [8], "FP32")
    inp.set_data_from_numpy(y)
    np.testing.assert_array_equal(scale_shift(client, inp).as_numpy("output__0"), 2 * y + 1)


def test_regions_that_calls_hold_after_unregistering_count_against_the_limits(tmp_path):
    # A region unregistered while a call still reads it stays mapped until the call ends
    # (its descriptor and SIGBUS guard slot too): it counts against
    # --shared-memory-max-regions until then, so register/call/unregister cycles of calls
    # that do not end cannot take mappings past the limit (before, they took one each).
    s = ServerProcess("--load-library", str(TEST_OPS), "--ops", "myops::*,myops_test::*",
                      "--allow-shared-memory", "--shared-memory-max-regions", "2",
                      "--cpu-workers", "2", "--inline-max-bytes", "0")
    c = grpcclient.InferenceServerClient(s.address)
    r = Regions(c)
    try:
        x = np.arange(64, dtype=np.float32)
        calls = []
        for i in range(2):
            gate = tmp_path / f"gate{i}"
            gate.mkdir()
            region, _, handle = r.make(x.nbytes)
            shm.set_shared_memory_region(handle, [x])
            calls.append((gated_call(c, region, x, gate), gate))
            c.unregister_system_shared_memory(region)
        assert c.get_system_shared_memory_status(as_json=True).get("regions", {}) == {}
        with pytest.raises(InferenceServerException,
                           match="0 regions and 0 bytes registered, 2 mappings and 512 bytes in "
                                 "use counting unregistered ones calls still hold") as e:
            r.make(x.nbytes)
        assert e.value.status() == "StatusCode.RESOURCE_EXHAUSTED"
        for (thread, outcome), gate in calls:
            (gate / "go").touch()
            thread.join(timeout=60)
            assert "error" not in outcome, outcome
            np.testing.assert_array_equal(outcome["y"], x)
        r.make(x.nbytes)  # the calls released their mappings
    finally:
        r.close()
        c.close()
        s.close()
