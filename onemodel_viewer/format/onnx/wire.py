"""The protobuf wire format, read and written by hand where ``onnx``'s classes lose information.

* exact float bit patterns: :func:`fixed32_fields` / :func:`float_bits` re-read a float field
  from the wire when upb may have quieted a NaN payload;
* :func:`strip_initializer_data`: the model bytes without the graph initializers' ``raw_data``
  and where each lies, so that a model of any size parses in little memory and its weights are
  mapped in place;
* :func:`fields`, :func:`varint`, :func:`varint_bytes`: the scanner and encoder under them.

Raises ``ValueError`` on bytes that are not protobuf; callers turn it into their own verdict.
No numpy, no onnx.
"""

from __future__ import annotations

import struct

from ..schema import bits_from_float

__all__ = ["DATA_LOCATION_EXTERNAL", "varint", "varint_bytes", "fixed32_fields", "float_bits", "fields",
           "strip_initializer_data"]

DATA_LOCATION_EXTERNAL = 1
"""``TensorProto.EXTERNAL``: the value of ``data_location`` for a tensor whose bytes are in another file."""


def varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise ValueError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift > 70:
            raise ValueError("varint too long")


def fixed32_fields(buf: bytes, field: int) -> list[int]:
    """Every 32-bit value of ``field`` (fixed32 or packed) in a serialized message, in order."""
    out: list[int] = []
    pos, n = 0, len(buf)
    while pos < n:
        key, pos = varint(buf, pos)
        num, wt = key >> 3, key & 7
        if wt == 0:
            _, pos = varint(buf, pos)
        elif wt == 1:
            pos += 8
        elif wt == 5:
            if num == field:
                out.append(struct.unpack_from("<I", buf, pos)[0])
            pos += 4
        elif wt == 2:
            ln, pos = varint(buf, pos)
            if num == field:
                out.extend(struct.unpack_from(f"<{ln // 4}I", buf, pos))
            pos += ln
        else:
            raise ValueError(f"unexpected wire type {wt}")
    return out


def float_bits(values, proto, field: int) -> tuple[int, ...]:
    """Bit patterns of a float field; re-read from the wire only when a NaN may have been quieted."""
    vals = list(values)
    if not any(v != v for v in vals):
        return tuple(bits_from_float(v) for v in vals)
    return tuple(fixed32_fields(proto.SerializeToString(), field))


def fields(buf, start: int, end: int):
    """(field number, wire type, field start, value start, value end) of each field in ``buf[start:end]``."""
    pos = start
    n = len(buf)
    while pos < end:
        fs = pos
        key = buf[pos]  # a one-byte varint inline (most keys and lengths): 1G strip 16.4 -> 11.4 ms CPU
        if key < 0x80:
            pos += 1
        else:
            key, pos = varint(buf, pos)
        num, wt = key >> 3, key & 7
        if wt == 0:
            _, ve = varint(buf, pos)
            vs = pos
        elif wt == 1:
            vs, ve = pos, pos + 8
        elif wt == 5:
            vs, ve = pos, pos + 4
        elif wt == 2:
            if pos < n and buf[pos] < 0x80:
                ln, vs = buf[pos], pos + 1
            else:
                ln, vs = varint(buf, pos)
            ve = vs + ln
        else:
            raise ValueError(f"wire type {wt}")
        if ve > end or num == 0:
            raise ValueError("field past the end of its message")
        pos = ve
        yield num, wt, fs, vs, ve


def strip_initializer_data(buf) -> tuple[bytes, dict[int, tuple[int, int]]] | None:
    """The model bytes without the graph initializers' raw_data, and where each raw_data lies in ``buf``.

    Lets the importer parse a model of any size in little memory and map its
    weights in place. None when the bytes are anything but plain (a repeated
    singular field, groups, truncation): the caller then parses them as they are.
    """
    try:
        top = list(fields(buf, 0, len(buf)))
        graphs = [f for f in top if f[0] == 7]
        if len(graphs) != 1 or graphs[0][1] != 2:
            return None
        _n, _w, _fs, gs, ge = graphs[0]
        graph = bytearray()
        spans: dict[int, tuple[int, int]] = {}
        index = 0
        for num, wt, fs, vs, ve in fields(buf, gs, ge):
            if num == 5 and wt == 2:
                tfields = list(fields(buf, vs, ve))
                raws = [f for f in tfields if f[0] == 9]
                if len(raws) > 1 or (raws and raws[0][1] != 2):
                    return None
                if raws:
                    stripped = b"".join(buf[f[2]:f[4]] for f in tfields if f[0] != 9)
                    spans[index] = (raws[0][3], raws[0][4] - raws[0][3])
                    graph += b"\x2a" + varint_bytes(len(stripped)) + stripped
                else:
                    graph += buf[fs:ve]
                index += 1
            else:
                graph += buf[fs:ve]
        head = b"".join(buf[f[2]:f[4]] for f in top if f[0] != 7)
        return head + b"\x3a" + varint_bytes(len(graph)) + bytes(graph), spans
    except (ValueError, IndexError):
        return None


def varint_bytes(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)
