"""The real myops-server under gRPC's own memory pressure: with a small budget, large
requests from many clients at once fill gRPC's resource quota (budget plus one largest
message), so gRPC reclaims memory (it ends connections with "Buffers full") while the
server's callback threads and CPU workers release received messages. gRPC 1.51 crashed
the server there: freeing a slice of the quota's memory outside an ExecCtx dereferences
a null one (see ReceivedSlices in proto/wire/include/myops/wire/tensor_wire.h; the unit
test is tests/wire/received_slices_test.cc). Before that was fixed this load ended the
server within seconds in 5 runs of 5. The server must survive it, then serve a request
exactly, and exit 0 on SIGTERM."""

from __future__ import annotations

import subprocess

import numpy as np

from myops_testing import BUILD, ServerProcess

LOADTEST = BUILD / "bench" / "loadtest" / "myops-loadtest"
MiB = 1 << 20


def test_the_server_survives_grpc_reclaiming_memory():
    import myops_client

    server = ServerProcess("--max-inflight-bytes", str(64 * MiB),
                           "--max-message-bytes", str(16 * MiB), "--cpu-workers", "2",
                           "--drain-delay", "0", "--grace-period", "10")
    try:
        loads = [subprocess.Popen(
            [str(LOADTEST), "--target", server.address, "--duration", "8", "--warmup", "0",
             "--max-windows", "1", "--min-requests", "1", "--deadline-ms", "120000", "--quiet",
             "--concurrency", "8", "--sizes", "4MiB", *mode],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            for mode in ([], ["--stream"], ["--protocol", "kserve"])]
        for load in loads:
            load.communicate(timeout=300)
        assert server.process.poll() is None, (
            f"the server ended ({server.process.poll()}) under memory pressure:\n"
            + server.log()[-3000:])
        client = myops_client.Client(server.address, timeout=30.0, shared_memory="off")
        x = np.arange(MiB, dtype=np.float32)
        np.testing.assert_array_equal(client.scale_shift(x, 2.0, 1.0), 2 * x + 1)
        assert server.terminate() == 0, server.log()[-3000:]
    finally:
        server.close()
