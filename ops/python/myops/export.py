"""Packaging exported programs for myops-server (``--program NAME=PATH``).

``package(exported_program, path)`` compiles a ``torch.export`` program with AOTInductor
into a ``.pt2`` package, as ``torch._inductor.aoti_compile_and_package`` does, and records
in its metadata (key ``myops.signature``) what the server needs to serve it safely: each
input's name, dtype and the range of every dimension, each output's name, dtype and shape,
and the operators outside ``aten`` it calls (so that a server without their library
refuses the package at start-up, naming the operator).

The ranges recorded are those the compiled code accepts, which can be narrower than the
export's ``Dim``: AOTInductor compiles dynamic sizes for 2 and up (sizes 0 and 1 are
specialized by PyTorch's tracing), and lowering may narrow a range further (a convolution
chooses its kernel by batch size). After compiling, the range checks of the generated code
are read back from the package and the signature keeps their intersection::

    import torch, myops, myops.export
    ep = torch.export.export(model, (x,), dynamic_shapes={"x": {0: torch.export.Dim("batch", max=64)}})
    myops.export.package(ep, "model.pt2", output_names=["y"])
    # myops-server --program model=model.pt2
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import zipfile
from typing import Any, Dict, List, Optional, Sequence

import torch

SIGNATURE_KEY = "myops.signature"

_DTYPES = {
    torch.float32: "float32",
    torch.float64: "float64",
    torch.float16: "float16",
    torch.bfloat16: "bfloat16",
    torch.int8: "int8",
    torch.int16: "int16",
    torch.int32: "int32",
    torch.int64: "int64",
    torch.uint8: "uint8",
    torch.bool: "bool",
}

_BUILT_IN_NAMESPACES = {"aten", "prims", "prim", "higher_order", "_operator"}


def _dtype(value: Any, what: str) -> str:
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{what} is a {type(value).__name__}; myops serves programs of tensors only")
    if value.dtype not in _DTYPES:
        raise TypeError(f"{what} has dtype {value.dtype}, which the wire cannot carry")
    return _DTYPES[value.dtype]


def _input_dims(value: torch.Tensor, ranges: Dict[Any, Any]) -> List[Any]:
    dims: List[Any] = []
    for size in value.shape:
        if isinstance(size, int):
            dims.append(size)
            continue
        expr = size.node.expr
        bounds = ranges.get(expr)
        low = max(int(bounds.lower) if bounds is not None else 0, 2)  # see the module's doc
        high = bounds.upper if bounds is not None else None
        high = int(high) if high is not None and high.is_finite else None
        dim: Dict[str, Any] = {"min": low, "symbol": str(expr)}
        if high is not None:
            dim["max"] = high
        dims.append(dim)
    return dims


def signature(
    exported: torch.export.ExportedProgram,
    input_names: Optional[Sequence[str]] = None,
    output_names: Optional[Sequence[str]] = None,
) -> Dict[str, Any]:
    """The ``myops.signature`` record of ``exported`` (what ``package`` stores)."""
    graph_signature = exported.graph_signature
    placeholders = {n.name: n for n in exported.graph.nodes if n.op == "placeholder"}
    user_inputs = list(graph_signature.user_inputs)
    names = list(input_names) if input_names is not None else user_inputs
    if len(names) != len(user_inputs):
        raise ValueError(f"{len(names)} input names for {len(user_inputs)} inputs")
    inputs = []
    for name, node_name in zip(names, user_inputs):
        value = placeholders[node_name].meta["val"]
        what = f"input '{name}'"
        inputs.append({"name": name, "dtype": _dtype(value, what),
                       "shape": _input_dims(value, exported.range_constraints)})
    output_node = next(n for n in exported.graph.nodes if n.op == "output")
    results = output_node.args[0]
    user_results = results[len(results) - len(graph_signature.user_outputs):]
    out_names = list(output_names) if output_names is not None else [
        f"output__{i}" for i in range(len(user_results))]
    if len(out_names) != len(user_results):
        raise ValueError(f"{len(out_names)} output names for {len(user_results)} outputs")
    outputs = []
    for name, node in zip(out_names, user_results):
        value = node.meta["val"]
        outputs.append({"name": name, "dtype": _dtype(value, f"output '{name}'"),
                        "shape": [s if isinstance(s, int) else -1 for s in value.shape]})
    ops = set()
    for node in exported.graph.nodes:
        target = node.target
        if node.op == "call_function" and isinstance(target, torch._ops.OpOverload):
            if target.namespace not in _BUILT_IN_NAMESPACES:
                ops.add(target.name())
    return {"inputs": inputs, "outputs": outputs, "ops": sorted(ops)}


def package(
    exported: torch.export.ExportedProgram,
    path: str | os.PathLike[str],
    *,
    input_names: Optional[Sequence[str]] = None,
    output_names: Optional[Sequence[str]] = None,
    inductor_configs: Optional[Dict[str, Any]] = None,
) -> str:
    """Compiles ``exported`` with AOTInductor into the package ``path`` (a ``.pt2``) with
    its ``myops.signature`` metadata; returns the path. Inputs are named as the exported
    function's parameters (or ``input_names``), outputs ``output__0``, ... (or
    ``output_names``). The package runs on the device the program was exported on. CPU
    kernels are compiled single-threaded unless ``inductor_configs`` sets ``cpp.threads``."""
    record = signature(exported, input_names, output_names)
    configs = dict(inductor_configs or {})
    # A server runs calls side by side on its workers: kernels compiled for one thread
    # scale with them, where OpenMP regions of a fixed width fight them for the cores
    # (bench/README.md, "Exported programs").
    configs.setdefault("cpp.threads", 1)
    metadata = dict(configs.get("aot_inductor.metadata", {}))
    metadata[SIGNATURE_KEY] = json.dumps(record)
    configs["aot_inductor.metadata"] = metadata
    written = str(torch._inductor.aoti_compile_and_package(
        exported, package_path=os.fspath(path), inductor_configs=configs))
    if _narrow_to_compiled(record, written):
        _rewrite_signature(written, record)
    return written


# The generated code's range checks of dynamic input sizes (AOTInductor's C++ wrapper).
_RANGE_CHECK = re.compile(r'input_handles\[(\d+)\]: dim value is too (?:small|large) at (\d+), "'
                          r'\s*<< "expected (?:it )?to be (>=|<=) (\d+),')


def _members(archive: zipfile.ZipFile, suffix: str) -> List[str]:
    return [n for n in archive.namelist() if n.endswith(suffix)]


def _narrow_to_compiled(record: Dict[str, Any], path: str) -> bool:
    """Intersects ``record``'s input ranges with the compiled code's checks; True when one
    changed."""
    with zipfile.ZipFile(path) as archive:
        source = "".join(archive.read(n).decode("utf-8", "replace")
                         for n in _members(archive, "wrapper.cpp"))
    changed = False
    for match in _RANGE_CHECK.finditer(source):
        index, dim, relation, bound = (int(match.group(1)), int(match.group(2)), match.group(3),
                                       int(match.group(4)))
        if index >= len(record["inputs"]) or dim >= len(record["inputs"][index]["shape"]):
            continue
        size = record["inputs"][index]["shape"][dim]
        if not isinstance(size, dict):
            continue
        if relation == ">=" and bound > size["min"]:
            size["min"], changed = bound, True
        if relation == "<=" and ("max" not in size or bound < size["max"]):
            size["max"], changed = bound, True
    return changed


def _rewrite_signature(path: str, record: Dict[str, Any]) -> None:
    """Replaces the signature in the package's metadata files (read by the loader from the
    archive, not compiled into the code)."""
    fd, temporary = tempfile.mkstemp(suffix=".pt2", dir=os.path.dirname(os.path.abspath(path)))
    os.close(fd)
    try:
        with zipfile.ZipFile(path) as src, zipfile.ZipFile(temporary, "w", zipfile.ZIP_STORED) as dst:
            for item in src.infolist():
                data = src.read(item)
                if item.filename.endswith("_metadata.json"):
                    metadata = json.loads(data)
                    if SIGNATURE_KEY in metadata:
                        metadata[SIGNATURE_KEY] = json.dumps(record)
                        data = json.dumps(metadata).encode()
                dst.writestr(item, data)
        shutil.move(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
