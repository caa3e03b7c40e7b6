"""The protobuf wire format, read and written by hand where ``onnx``'s classes lose information.

* exact float bit patterns: :func:`fixed32_fields` / :func:`float_bits` re-read a float field
  from the wire when upb may have quieted a NaN payload;
* :func:`strip_raw_data`: the model bytes without the ``raw_data`` of the graph's initializers and
  attribute tensors (subgraphs included) and where each lies, so that a model of any size parses
  in little memory and its weights are viewed in place;
* :func:`fields`, :func:`varint`, :func:`varint_bytes`: the scanner and encoder under them.

Raises ``ValueError`` on bytes that are not protobuf; callers turn it into their own verdict.
No numpy, no onnx.
"""

from __future__ import annotations

import struct

from ..schema import bits_from_float

__all__ = ["DATA_LOCATION_EXTERNAL", "varint", "varint_bytes", "fixed32_fields", "float_bits", "fields",
           "strip_raw_data", "MAX_NESTING"]

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


MAX_NESTING = 64
"""Subgraphs nested deeper than this are left to protobuf (:func:`strip_raw_data` gives None)."""


def strip_raw_data(buf) -> tuple[bytes, dict[str, tuple[int, int]]] | None:
    """The model bytes without the ``raw_data`` of its graph's tensors, and where each lies in ``buf``.

    The tensors are the graph initializers and the attribute tensors of its nodes (a Constant node's
    ``value``, a ``tensors`` attribute), in the main graph and in every subgraph of an attribute
    (``If``, ``Loop``, ``Scan``); each is keyed by the ``where`` the importer gives it
    (``onnx.graph.initializers[0]``, ``onnx.graph.nodes[3].attributes[0].value``,
    ``onnx.graph.nodes[5].attributes[1].value.initializers[0]``, ``...value[2]`` for ``tensors``).
    Lets the importer parse a model of any size in little memory and view its weights in place.
    None when the bytes are anything but plain (a ``raw_data`` twice, an attribute's ``t`` or ``g``
    twice: protobuf would merge them; groups; truncation; deeper than :data:`MAX_NESTING`): the
    caller then parses them as they are.
    """
    try:
        top = list(fields(buf, 0, len(buf)))
        graphs = [f for f in top if f[0] == 7]
        if len(graphs) != 1 or graphs[0][1] != 2:
            return None
        _n, _w, fs, gs, ge = graphs[0]
        spans: dict[str, tuple[int, int]] = {}
        graph = _graph(buf, gs, ge, "onnx.graph", spans, 0)
        if graph is None:
            graph = bytes(buf[gs:ge])
        head = b"".join(buf[f[2]:f[4]] for f in top if f[0] != 7)
        return head + b"\x3a" + varint_bytes(len(graph)) + graph, spans
    except (ValueError, IndexError, RecursionError):
        return None


def _message(tag: bytes, body: bytes) -> bytes:
    return tag + varint_bytes(len(body)) + body


def _graph(buf, start: int, end: int, where: str, spans: dict, depth: int) -> bytes | None:
    """A GraphProto without its tensors' raw_data (None: nothing to strip, the bytes stay as they are)."""
    if depth > MAX_NESTING:
        raise ValueError("subgraphs nested too deeply")
    out = bytearray()
    changed = False
    inits = nodes = 0
    for num, wt, fs, vs, ve in fields(buf, start, end):
        part = None
        if wt == 2 and num == 5:  # initializer
            part = _tensor(buf, vs, ve, f"{where}.initializers[{inits}]", spans)
            inits += 1
            tag = b"\x2a"
        elif wt == 2 and num == 1:  # node
            part = _node(buf, vs, ve, where, nodes, spans, depth)
            nodes += 1
            tag = b"\x0a"
        if part is None:
            out += buf[fs:ve]
        else:
            out += _message(tag, part)
            changed = True
    return bytes(out) if changed else None


def _tensor(buf, start: int, end: int, where: str, spans: dict) -> bytes | None:
    tfields = list(fields(buf, start, end))
    raws = [f for f in tfields if f[0] == 9]
    if not raws:
        return None
    if len(raws) > 1 or raws[0][1] != 2:
        raise ValueError("raw_data twice")
    spans[where] = (raws[0][3], raws[0][4] - raws[0][3])
    return b"".join(buf[f[2]:f[4]] for f in tfields if f[0] != 9)


def _node(buf, start: int, end: int, graph: str, index: int, spans: dict, depth: int) -> bytes | None:
    """A NodeProto without its attribute tensors' raw_data (its ``where`` built only when one is found)."""
    out = bytearray()
    changed = False
    attrs = 0
    for num, wt, fs, vs, ve in fields(buf, start, end):
        part = None
        if wt == 2 and num == 5:  # attribute
            part = _attribute(buf, vs, ve, graph, index, attrs, spans, depth)
            attrs += 1
        if part is None:
            out += buf[fs:ve]
        else:
            out += _message(b"\x2a", part)
            changed = True
    return bytes(out) if changed else None


def _attribute(buf, start: int, end: int, graph: str, node: int, index: int, spans: dict, depth: int) -> bytes | None:
    afields = list(fields(buf, start, end))
    if not any(f[1] == 2 and f[0] in (5, 6, 10, 11) for f in afields):
        return None
    if sum(f[0] == 5 for f in afields) > 1 or sum(f[0] == 6 for f in afields) > 1:
        raise ValueError("a singular message field twice")  # protobuf merges them
    w = f"{graph}.nodes[{node}].attributes[{index}].value"
    out = bytearray()
    changed = False
    tensors = graphs = 0
    for num, wt, fs, vs, ve in afields:
        part = None
        if wt == 2 and num == 5:  # t
            part, tag = _tensor(buf, vs, ve, w, spans), b"\x2a"
        elif wt == 2 and num == 10:  # tensors
            part, tag = _tensor(buf, vs, ve, f"{w}[{tensors}]", spans), b"\x52"
            tensors += 1
        elif wt == 2 and num == 6:  # g
            part, tag = _graph(buf, vs, ve, w, spans, depth + 1), b"\x32"
        elif wt == 2 and num == 11:  # graphs
            part, tag = _graph(buf, vs, ve, f"{w}[{graphs}]", spans, depth + 1), b"\x5a"
            graphs += 1
        if part is None:
            out += buf[fs:ve]
        else:
            out += _message(tag, part)
            changed = True
    return bytes(out) if changed else None


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
