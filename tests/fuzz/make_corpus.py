#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets (tests/fuzz/corpus/<target>/) from valid
and near-valid messages, encoded by hand here (no protobuf or numpy needed). Rerun after
changing it; the output is deterministic. Files are named after what they hold.

The sliced targets (request, request_differential, response, health, call_request,
call_response) read a split prefix
first (see slices.h): one byte whose low 3 bits count the cuts, then one length per cut.
Each message is written whole (prefix 0x00) and cut into a few slices; a few requests
are padded to around the parser's head cap (bit 3 of the prefix, see slices.h).
"""
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def key(field, wire_type):
    return varint(field << 3 | wire_type)


def ld(field, payload):  # length-delimited field
    return key(field, 2) + varint(len(payload)) + payload


def tensor(dtype, shape, data, packed=True):
    out = key(1, 0) + varint(dtype) if dtype else b""
    if shape and packed:
        out += ld(2, b"".join(varint(s & (2**64 - 1)) for s in shape))
    elif shape:
        out += b"".join(key(2, 0) + varint(s & (2**64 - 1)) for s in shape)
    if data:
        out += ld(3, data)
    return out


def request(t, alpha=2.0, beta=1.0, device=b"", request_id=0):
    out = ld(1, t) + key(2, 1) + struct.pack("<d", alpha) + key(3, 1) + struct.pack("<d", beta)
    if device:
        out += ld(4, device)
    if request_id:
        out += key(5, 0) + varint(request_id)
    return out


def response(t, device=b"cpu"):
    timing = b"".join(key(i, 0) + varint(1000 * i) for i in range(1, 6)) + ld(6, device)
    return ld(1, t) + ld(2, timing)


F32 = struct.pack("<4f", 1, 2, 3, 4)


def request_messages():
    yield "f32_2x2", request(tensor(1, [2, 2], F32))
    yield "f64_3", request(tensor(2, [3], struct.pack("<3d", 1, 2, 3)), device=b"cpu")
    yield "f16_scalar", request(tensor(3, [], b"\x00\x3c"), device=b"cuda:0", request_id=7)
    yield "bf16_empty", request(tensor(4, [0, 5], b""))
    yield "unpacked_shape", request(tensor(1, [1, 4], F32, packed=False))
    yield "data_first", request(ld(3, F32) + key(1, 0) + varint(1) + ld(2, varint(4)))
    yield "two_tensors_merge", ld(1, tensor(1, [4], b"")) + ld(1, ld(3, F32)) + key(2, 1) + bytes(8)
    yield "unknown_fields", request(tensor(1, [4], F32) + key(9, 5) + bytes(4)) + ld(15, b"xyz") + \
        key(16, 3) + key(1, 0) + b"\x01" + key(16, 4)
    yield "negative_dim", request(tensor(1, [-1], F32))
    yield "no_tensor", key(2, 1) + struct.pack("<d", 1.5)
    yield "empty", b""
    yield "truncated", request(tensor(1, [2, 2], F32))[:-5]
    # Regressions: tag and length encodings protobuf reads its own way (wire/tensor_wire.cc).
    yield "regress_tag_over_32_bits", bytes.fromhex(
        "0a18f8feefff10041a100000803f000000400000404000008040110000000000000040190000000000"
        "00f03f")
    yield "regress_six_byte_tag", b"\x90\x80\x80\x80\x80\x00\x01"
    yield "regress_six_byte_length", b"\x22\x81\x80\x80\x80\x00x"
    yield "wrong_wire_type_tensor", key(1, 0) + varint(5) + request(tensor(1, [1], F32[:4]))


def response_messages():
    yield "f32_2x2", response(tensor(1, [2, 2], F32))
    yield "f64_1", response(tensor(2, [1], struct.pack("<d", 3)))
    yield "empty_tensor", response(tensor(1, [0], b""))
    yield "scalar_f16", response(tensor(3, [], b"\x00\x3c"))
    yield "size_mismatch", response(tensor(1, [3], F32))
    yield "huge_dims", response(tensor(1, [2**62, 2**62], b""))
    yield "bad_dtype", response(tensor(9, [1], F32[:4]))
    yield "no_output", ld(2, key(1, 0) + b"\x05")


def health_messages():
    for status in range(5):
        yield f"status_{status}", key(1, 0) + varint(status) if status else b""
    yield "status_long_varint", key(1, 0) + varint(2**32 + 1)
    yield "unknown_fields", ld(2, b"abc") + key(3, 5) + bytes(4) + key(1, 0) + b"\x01" + key(4, 1) + bytes(8)
    yield "regress_group", key(5, 3) + key(1, 0) + b"\x02" + key(5, 4) + key(1, 0) + b"\x01"
    yield "truncated", key(1, 0) + b"\x80"


def value(kind_field, payload):  # myops.v1.Value with one field set
    return payload if kind_field is None else ld(kind_field, payload)


def argument(val, name=b""):
    return (ld(1, name) if name else b"") + ld(2, val)


def call_messages():
    t = tensor(1, [2, 2], F32)
    yield "call_scale_shift", (ld(1, b"myops::scale_shift") + ld(2, argument(ld(1, t))) +
                               ld(2, argument(key(3, 1) + struct.pack("<d", 2.0))) +
                               ld(2, argument(key(3, 1) + struct.pack("<d", 1.0), b"beta")))
    yield "call_lists", (ld(1, b"myops_test::stack_all") +
                         ld(2, argument(ld(8, ld(1, t) + ld(1, t)))) +
                         ld(2, argument(ld(6, ld(1, b"\x01\x02\x03")))) +
                         ld(2, argument(ld(7, ld(1, struct.pack("<2d", 1.0, 2.0))))))
    yield "call_scalars", (ld(1, b"myops_test::describe") + ld(2, argument(ld(1, t))) +
                           ld(2, argument(ld(5, b"p="))) + ld(2, argument(key(4, 0) + b"\x01")) +
                           ld(2, argument(key(9, 0) + b"\x08")) + ld(2, argument(ld(10, b""))) +
                           ld(3, b"cpu") + key(4, 0) + b"\x07")
    yield "call_empty_value", ld(1, b"x::y") + ld(2, argument(b""))


def call_response_messages():
    t = tensor(1, [2, 2], F32)
    timing = key(3, 0) + varint(1234) + ld(6, b"cpu")
    yield "one_tensor", ld(1, ld(1, t)) + ld(2, timing) + key(3, 0) + b"\x05"
    yield "tuple_and_list", (ld(1, ld(1, t)) + ld(1, ld(1, tensor(2, [], struct.pack("<d", 1.5)))) +
                             ld(1, ld(8, ld(1, t) + ld(1, tensor(1, [0, 3], b"")))))
    yield "scalars", (ld(1, key(2, 0) + varint(2**64 - 3)) + ld(1, key(3, 1) + struct.pack("<d", 2.5)) +
                      ld(1, key(4, 0) + b"\x01") + ld(1, ld(5, b"text")) +
                      ld(1, ld(6, ld(1, b"\x01\x7f"))) + ld(1, ld(7, ld(1, struct.pack("<d", -1.0)))) +
                      ld(1, key(9, 0) + b"\x03") + ld(1, ld(10, b"")))
    yield "merged_tensor", ld(1, ld(1, tensor(1, [1], F32[:4])) + ld(1, tensor(0, [1], F32[4:12])))
    yield "stream_response", key(1, 0) + b"\x02" + ld(2, ld(1, ld(1, t)) + ld(2, timing))
    yield "stream_error", key(1, 0) + b"\x03" + ld(3, key(1, 0) + b"\x03" + ld(2, b"bad"))
    yield "short_data", ld(1, ld(1, tensor(1, [3], F32[:8])))
    yield "no_kind", ld(1, b"")
    # Results in the call's shared memory region "r" (Tensor.shared_memory), and one
    # elsewhere.
    ref = lambda name, offset, size: ld(4, ld(1, name) + key(2, 0) + varint(offset) +  # noqa
                                        key(3, 0) + varint(size))
    yield "region_result", ld(1, ld(1, tensor(1, [2, 2], b"") + ref(b"r", 64, 16))) + ld(2, timing)
    yield "region_elsewhere", ld(1, ld(1, tensor(1, [2], b"") + ref(b"other", 0, 8)))


def splits(name, message):
    yield f"{name}", b"\x00" + message
    if len(message) > 4:
        yield f"{name}.sliced", bytes([3, 1, len(message) // 3 % 256, 0]) + message


def npy(descr, shape, data, version=1, fortran=False):
    dims = ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "")
    header = "{'descr': '%s', 'fortran_order': %s, 'shape': (%s), }" % (
        descr, "True" if fortran else "False", dims)
    prefix_len = 10 if version == 1 else 12
    pad = (64 - (prefix_len + len(header) + 1) % 64) % 64
    header = (header + " " * pad + "\n").encode("latin1")
    size = struct.pack("<H", len(header)) if version == 1 else struct.pack("<I", len(header))
    return b"\x93NUMPY" + bytes([version, 0]) + size + header + data


def npy_files():
    yield "f32_2x2.npy", npy("<f4", [2, 2], F32)
    yield "f64_3.npy", npy("<f8", [3], struct.pack("<3d", 1, 2, 3))
    yield "f16_scalar.npy", npy("<f2", [], b"\x00\x3c")
    yield "empty.npy", npy("<f4", [0, 3], b"")
    yield "v2.npy", npy("<f4", [1], F32[:4], version=2)
    yield "v3.npy", npy("<f4", [1], F32[:4], version=3)
    yield "fortran.npy", npy("<f4", [2, 2], F32, fortran=True)
    yield "big_endian.npy", npy(">f4", [1], F32[:4])
    yield "int32.npy", npy("<i4", [1], F32[:4])
    yield "short_data.npy", npy("<f4", [3], F32[:8])


def write(target, files):
    folder = os.path.join(HERE, "corpus", target)
    os.makedirs(folder, exist_ok=True)
    for name, data in files:
        with open(os.path.join(folder, name), "wb") as f:
            f.write(data)


def padded(name, message):
    # Bit 3 set: slices.h pads the message to the cap (high 4 bits 8), 8 bytes under
    # (7) or over (9) it.
    for high, where in ((7, "under"), (8, "at"), (9, "over")):
        yield f"{name}.pad_{where}_cap", bytes([high << 4 | 8]) + message


def main():
    req = [s for n, m in request_messages() for s in splits(n, m)]
    req += list(padded("f32_2x2", request(tensor(1, [2, 2], F32))))
    write("request", req)
    write("request_differential", req)
    write("response", [s for n, m in response_messages() for s in splits(n, m)])
    write("health", [s for n, m in health_messages() for s in splits(n, m)])
    write("npy", npy_files())
    write("call_request", [s for n, m in call_messages() for s in splits(n, m)])
    write("call_response", [s for n, m in call_response_messages() for s in splits(n, m)])
    return 0


if __name__ == "__main__":
    sys.exit(main())
