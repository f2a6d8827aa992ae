"""numpy <-> myops.v1.Value for the operator-table tests (the wire contract by hand,
independent of the client libraries)."""

from __future__ import annotations

import numpy as np

DTYPES = {np.dtype(np.float32): 1, np.dtype(np.float64): 2, np.dtype(np.float16): 3,
          np.dtype(np.int8): 5, np.dtype(np.int16): 6, np.dtype(np.int32): 7,
          np.dtype(np.int64): 8, np.dtype(np.uint8): 9, np.dtype(np.bool_): 10}
NUMPY = {v: k for k, v in DTYPES.items()}


def tensor(pb, array: np.ndarray):
    array = np.ascontiguousarray(array)
    return pb.Tensor(dtype=DTYPES[array.dtype], shape=list(array.shape), data=array.tobytes())


def value(pb, v):
    if v is None:
        return pb.Value(none=pb.NoneValue())
    if isinstance(v, np.ndarray):
        return pb.Value(tensor=tensor(pb, v))
    if isinstance(v, bool):
        return pb.Value(bool_value=v)
    if isinstance(v, int):
        return pb.Value(int_value=v)
    if isinstance(v, float):
        return pb.Value(float_value=v)
    if isinstance(v, str):
        return pb.Value(string_value=v)
    if isinstance(v, tuple) and v and v[0] == "dtype":
        return pb.Value(scalar_type=v[1])
    if isinstance(v, list) and v and all(isinstance(x, np.ndarray) for x in v):
        return pb.Value(tensor_list=pb.TensorList(tensors=[tensor(pb, x) for x in v]))
    if isinstance(v, list) and all(isinstance(x, int) for x in v):
        return pb.Value(int_list=pb.IntList(values=v))
    if isinstance(v, list):
        return pb.Value(float_list=pb.FloatList(values=v))
    raise TypeError(type(v))


def request(pb, op: str, *args, device: str = "", request_id: int = 0, **kwargs):
    arguments = [pb.Argument(value=value(pb, a)) for a in args]
    arguments += [pb.Argument(name=k, value=value(pb, v)) for k, v in kwargs.items()]
    return pb.CallRequest(op=op, arguments=arguments, device=device, request_id=request_id)


def to_numpy(t) -> np.ndarray:
    if t.dtype not in NUMPY:
        raise AssertionError(f"unexpected dtype {t.dtype}")
    return np.frombuffer(t.data, NUMPY[t.dtype]).reshape(tuple(t.shape))


def result(v):
    kind = v.WhichOneof("kind")
    if kind == "tensor":
        return to_numpy(v.tensor)
    if kind == "tensor_list":
        return [to_numpy(t) for t in v.tensor_list.tensors]
    if kind == "none":
        return None
    if kind in ("int_list", "float_list"):
        return list(getattr(v, kind).values)
    return getattr(v, kind)
