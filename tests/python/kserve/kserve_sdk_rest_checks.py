"""Checks of the KServe Python SDK's REST inference client (kserve.InferenceRESTClient
with protocol v2, asyncio over httpx), another client nobody here wrote, against a
running server's HTTP/REST front end: readiness, infer with JSON and binary tensor data,
scalar arguments as inputs and as parameters, several outputs, results equal to local
torch calls, and errors with the server's HTTP statuses and messages.

Like kserve_sdk_checks.py, run in its own interpreter by test_kserve_sdk_rest.py (the
SDK registers the protocol's protobuf messages, as tritonclient does).

    python kserve_sdk_rest_checks.py HTTP_ADDRESS CHECK     # exit 0: passed
"""

from __future__ import annotations

import asyncio
import sys

import httpx
import numpy as np
import torch

from kserve import InferenceRESTClient, InferInput, InferRequest, RESTConfig

SCALE_SHIFT = "myops::scale_shift"


def run(coroutine_function, address):
    """Runs coroutine_function(client, base_url) with a fresh client and event loop."""
    async def main():
        client = InferenceRESTClient(RESTConfig(protocol="v2", timeout=60))
        try:
            return await coroutine_function(client, f"http://{address}")
        finally:
            await client.close()
    return asyncio.run(main())


def check_readiness(address):
    async def check(client, base):
        return (await client.is_server_live(base), await client.is_server_ready(base),
                await client.is_model_ready(base, SCALE_SHIFT),
                await client.is_model_ready(base, "myops::no_such_op"))
    assert run(check, address) == (True, True, True, False)


def check_infer(address, binary):
    x = np.linspace(-4, 4, 24, dtype=np.float32).reshape(4, 6)
    expected = x * np.float32(2.0) - np.float32(3.0)  # 2x is exact: one rounding, as fma

    async def infer(client, base):
        tensor = InferInput("x", list(x.shape), "FP32")
        tensor.set_data_from_numpy(x, binary_data=binary)
        request = InferRequest(SCALE_SHIFT, [tensor], request_id=f"rest-{binary}",
                               parameters={"alpha": 2.0, "beta": -3.0})
        return await client.infer(base, request, model_name=SCALE_SHIFT)
    response = run(infer, address)
    assert response.id == f"rest-{binary}" and response.model_name == SCALE_SHIFT
    (output,) = response.outputs
    assert output.name == "output__0" and output.datatype == "FP32"
    np.testing.assert_array_equal(output.as_numpy().reshape(4, 6), expected)


def check_scalars_as_inputs_and_several_outputs(address):
    x = np.array([[3.5, -2.0], [7.25, 0.5]], dtype=np.float64)

    async def infer(client, base):
        tensors = [InferInput("x", [2, 2], "FP64"), InferInput("alpha", [1], "FP64"),
                   InferInput("beta", [1], "FP64")]
        for t, data in zip(tensors, (x, np.array([-1.0]), np.array([4.0]))):
            t.set_data_from_numpy(data, binary_data=False)
        shifted = await client.infer(base, InferRequest(SCALE_SHIFT, tensors),
                                     model_name=SCALE_SHIFT)
        t = InferInput("x", [2, 2], "FP64")
        t.set_data_from_numpy(x, binary_data=True)
        minmax = await client.infer(base, InferRequest("myops_test::minmax", [t]),
                                    model_name="myops_test::minmax")
        return shifted, minmax
    shifted, minmax = run(infer, address)
    np.testing.assert_array_equal(shifted.outputs[0].as_numpy().reshape(2, 2), -x + 4.0)
    lo, hi = torch.ops.aten.aminmax(torch.from_numpy(x))
    assert [o.name for o in minmax.outputs] == ["min", "max"]
    assert [o.as_numpy().item() for o in minmax.outputs] == [lo.item(), hi.item()]


def check_errors(address):
    async def infer(client, base, model, parameters):
        t = InferInput("x", [2], "FP32")
        t.set_data_from_numpy(np.ones(2, np.float32), binary_data=False)
        try:
            await client.infer(base, InferRequest(model, [t], parameters=parameters),
                               model_name=model)
        except httpx.HTTPStatusError as e:
            return e.response.status_code, e.response.json()["error"]
        raise AssertionError("no error")

    async def errors(client, base):
        return (await infer(client, base, "myops::nope", None),
                await infer(client, base, SCALE_SHIFT, {"alpha": 1.0}))
    (status, message), (status2, message2) = run(errors, address)
    assert status == 404 and "unknown model 'myops::nope'" in message
    assert status2 == 400
    assert "myops::scale_shift() is missing required argument 'beta'" in message2


CHECKS = {
    "readiness": check_readiness,
    "infer_json": lambda address: check_infer(address, binary=False),
    "infer_binary": lambda address: check_infer(address, binary=True),
    "scalars_and_outputs": check_scalars_as_inputs_and_several_outputs,
    "errors": check_errors,
}

if __name__ == "__main__":
    CHECKS[sys.argv[2]](sys.argv[1])
    print("passed", sys.argv[2])
