"""Checks of the KServe Python SDK's gRPC inference client (kserve.InferenceGRPCClient,
asyncio), another client nobody here wrote, against a running server: readiness,
ModelInfer with raw (binary) and typed contents, scalar arguments as inputs and as
parameters, several outputs, results equal to local torch calls, and errors with the
server's codes.

The SDK and tritonclient register the same protobuf messages (package `inference`) in
one process-wide pool, so the SDK cannot be imported next to the other tests:
test_kserve_sdk.py runs each check here in its own interpreter.

    python kserve_sdk_checks.py ADDRESS CHECK     # exit 0: passed
"""

from __future__ import annotations

import asyncio
import sys

import grpc
import numpy as np
import torch

from kserve import InferenceGRPCClient, InferInput, InferRequest

SCALE_SHIFT = "myops::scale_shift"


def run(coroutine_function, address):
    """Runs coroutine_function(client) with a fresh client in a fresh event loop."""
    async def main():
        client = InferenceGRPCClient(url=address, timeout=30, retries=0)
        try:
            return await coroutine_function(client)
        finally:
            await client.close()
    return asyncio.run(main())


def check_readiness(address):
    async def check(client):
        return (await client.is_server_live(), await client.is_server_ready(),
                await client.is_model_ready(SCALE_SHIFT),
                await client.is_model_ready("myops::no_such_op"))
    assert run(check, address) == (True, True, True, False)


def check_infer_scale_shift(address, binary):
    x = np.linspace(-4, 4, 24, dtype=np.float32).reshape(4, 6)
    expected = x * np.float32(2.0) - np.float32(3.0)  # 2x is exact: one rounding, as fma

    async def infer(client):
        tensor = InferInput("x", list(x.shape), "FP32")
        tensor.set_data_from_numpy(x, binary_data=binary)
        # The SDK's gRPC parameters are str, bool or int (its InferParameter has no
        # double_param): float arguments given as int parameters.
        request = InferRequest(SCALE_SHIFT, [tensor], request_id=f"sdk-{binary}",
                               parameters={"alpha": 2, "beta": -3})
        return await client.infer(request)
    response = run(infer, address)
    assert response.id == f"sdk-{binary}" and response.model_name == SCALE_SHIFT
    (output,) = response.outputs
    assert output.name == "output__0" and output.datatype == "FP32"
    np.testing.assert_array_equal(output.as_numpy(), expected)


def check_infer_scalars_as_inputs_and_several_outputs(address):
    x = np.array([[3.5, -2.0], [7.25, 0.5]], dtype=np.float64)

    async def infer(client):
        tensors = [InferInput("x", [2, 2], "FP64"), InferInput("alpha", [1], "FP64"),
                   InferInput("beta", [1], "FP64")]
        for t, data in zip(tensors, (x, np.array([-1.0]), np.array([4.0]))):
            t.set_data_from_numpy(data, binary_data=True)
        shifted = await client.infer(InferRequest(SCALE_SHIFT, tensors))
        t = InferInput("x", [2, 2], "FP64")
        t.set_data_from_numpy(x, binary_data=True)
        minmax = await client.infer(InferRequest("myops_test::minmax", [t]))
        return shifted, minmax
    shifted, minmax = run(infer, address)
    np.testing.assert_array_equal(shifted.outputs[0].as_numpy(), -x + 4.0)
    lo, hi = torch.ops.aten.aminmax(torch.from_numpy(x))
    outputs = {o.name: o.as_numpy() for o in minmax.outputs}
    assert outputs["min"] == lo.numpy() and outputs["max"] == hi.numpy()


def check_errors_carry_the_servers_codes(address):
    async def infer(client, model, tensors, parameters=None):
        try:
            await client.infer(InferRequest(model, tensors, parameters=parameters))
        except grpc.aio.AioRpcError as error:
            return error.code(), error.details()
        return None

    def x_input(datatype="FP32"):
        t = InferInput("x", [3], datatype)
        t.set_data_from_numpy(np.ones(3, dtype=np.float32 if datatype == "FP32" else np.int32),
                              binary_data=True)
        return t

    async def errors(client):
        return (await infer(client, "myops::no_such_op", [x_input()]),
                await infer(client, SCALE_SHIFT, [x_input()]),  # alpha and beta missing
                await infer(client, SCALE_SHIFT, [x_input("INT32")], {"alpha": 1, "beta": 0}))
    unknown, missing, dtype = run(errors, address)
    assert unknown[0] == grpc.StatusCode.NOT_FOUND and "myops::no_such_op" in unknown[1]
    assert missing[0] == grpc.StatusCode.INVALID_ARGUMENT and "alpha" in missing[1]
    assert dtype[0] == grpc.StatusCode.INVALID_ARGUMENT


CHECKS = {
    "readiness": check_readiness,
    "infer_raw": lambda address: check_infer_scale_shift(address, True),
    "infer_typed": lambda address: check_infer_scale_shift(address, False),
    "scalars_and_outputs": check_infer_scalars_as_inputs_and_several_outputs,
    "errors": check_errors_carry_the_servers_codes,
}

if __name__ == "__main__":
    CHECKS[sys.argv[2]](sys.argv[1])
    print("passed", sys.argv[2])
