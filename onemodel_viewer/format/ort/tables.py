"""A forward flatbuffer serializer driven by :mod:`.fbs` (ORT's schema as data, the reader's too).

The usual flatbuffers builder works back to front and holds the whole buffer. This one lays the
buffer out front to back: every table, vector and string is placed (breadth first) after the
object that refers to it, so each uoffset points forward as flatbuffers requires, and the
``[uint8]`` payload vectors (tensor ``raw_data``) are placed last, each one's bytes at a multiple of
the requested alignment from the start of the buffer. :func:`layout` returns the table region as
bytes plus where each payload goes; the payload bytes themselves are never held here.

Objects: :class:`Table` (a schema table name and its fields by name: scalars, ``bytes``/``str``
strings, sub-tables, ``(type code, Table)`` unions, lists for vectors), :class:`Payload` (a
``[uint8]`` vector whose bytes are copied in later). Fields are looked up in :data:`.fbs.TABLES`,
so the writer and the verifying reader cannot disagree on a slot, a kind or a default.
Scalars equal to their schema default are left out, as flatbuffers builders do.
"""

from __future__ import annotations

import struct
from collections import deque

from ..errors import FormatError, Kind
from .fbs import STRUCTS, TABLES

__all__ = ["MAX_SIZE", "Payload", "Table", "Layout", "layout"]

MAX_SIZE = (1 << 31) - 1
"""flatbuffers' FLATBUFFERS_MAX_BUFFER_SIZE: the verifier (ONNX Runtime's included) refuses a larger buffer."""
IDENTIFIER = b"ORTM"

_FMT = {"bool": "<?", "int8": "<b", "uint8": "<B", "int16": "<h", "uint16": "<H", "int32": "<i",
        "uint32": "<I", "int64": "<q", "uint64": "<Q", "float32": "<f", "float64": "<d"}
_SIZE = {k: struct.calcsize(v) for k, v in _FMT.items()}


class Table:
    """One table: ``name`` in :data:`.fbs.TABLES`, ``fields`` by field name (absent = not written)."""

    __slots__ = ("name", "fields", "pos")

    def __init__(self, table: str, /, **fields) -> None:
        self.name = table
        self.fields = {k: v for k, v in fields.items() if v is not None}
        self.pos = 0


class Payload:
    """A ``[uint8]`` vector of ``length`` bytes placed after every table; ``source`` says where they come
    from (the writer's business: ``(storage, offset)`` or ``bytes``). ``pos``: where its bytes start."""

    __slots__ = ("length", "source", "pos", "where")

    def __init__(self, length: int, source, where: str = "") -> None:
        self.length = length
        self.source = source
        self.pos = 0
        self.where = where


class _Blob:
    """A placed vector or string: its encoded bytes (offsets patched at encoding) and children."""

    __slots__ = ("kind", "elem", "items", "pos", "size", "align")

    def __init__(self, kind: str, elem, items, size: int, align: int) -> None:
        self.kind, self.elem, self.items, self.size, self.align = kind, elem, items, size, align
        self.pos = 0


def _align(n: int, a: int) -> int:
    return (n + a - 1) & ~(a - 1)


class Layout:
    """The result: ``head`` (bytes 0..len(head): root offset, identifier, every table, vector and string),
    ``payloads`` in file order (their ``pos`` set), ``size`` (the whole buffer)."""

    def __init__(self, head: bytes, payloads: list[Payload], size: int) -> None:
        self.head, self.payloads, self.size = head, payloads, size


class _Placer:
    def __init__(self) -> None:
        self.cursor = 8  # root uoffset + file identifier
        self.queue: deque = deque()
        self.tables: list[tuple[Table, list, int, int]] = []  # table, [(field, voffset, kind, elem, slot)], size, vtable pos
        self.blobs: list[_Blob] = []
        self.vtables: dict[bytes, int] = {}
        self.vt_bytes: list[tuple[int, bytes]] = []
        self.payloads: list[Payload] = []

    def child(self, kind: str, elem, value):
        """A placeable object for a field value (a Table as is, a _Blob for strings/vectors)."""
        if kind == "table":
            return value
        if kind == "string":
            data = value.encode("utf-8") if isinstance(value, str) else bytes(value)
            return _Blob("string", None, data, 4 + len(data) + 1, 4)
        if kind == "vector":
            if isinstance(value, Payload):
                return value
            if elem == "string":
                return _Blob("vstring", None, [self.child("string", None, s) for s in value], 4 + 4 * len(value), 4)
            if elem.startswith("table:"):
                return _Blob("vtable", None, list(value), 4 + 4 * len(value), 4)
            if elem.startswith("struct:"):
                size, members = STRUCTS[elem[7:]]
                return _Blob("vstruct", members, list(value), 4 + size * len(value), 4)
            width = _SIZE[elem]
            return _Blob("vscalar", elem, list(value), 4 + width * len(value), max(4, width))
        raise AssertionError(kind)  # pragma: no cover

    def place(self, obj) -> None:
        if isinstance(obj, Payload):
            self.payloads.append(obj)
            return
        if isinstance(obj, _Blob):
            if obj.align > 4:  # elements aligned, after the 4-byte length
                obj.pos = _align(self.cursor + 4, obj.align) - 4
            else:
                obj.pos = _align(self.cursor, 4)
            self.cursor = obj.pos + obj.size
            self.blobs.append(obj)
            if obj.kind in ("vstring", "vtable"):
                self.queue.extend(obj.items)
            return
        self.place_table(obj)

    def place_table(self, t: Table) -> None:
        schema = TABLES[t.name]
        known = {f[0]: f for f in schema}
        slots = []
        for name, value in t.fields.items():
            if name not in known:
                raise AssertionError(f"{t.name}.{name} is not in ort.fbs")  # pragma: no cover - a writer bug
            _, voff, kind, elem, default = known[name]
            if kind == "scalar":
                if value == default and not (isinstance(value, float) and struct.pack("<d", value) != struct.pack("<d", default)):
                    continue
                slots.append((name, voff, kind, elem, _SIZE[elem], value))
            elif kind == "union":
                code, sub = value
                slots.append((name, voff, "table", None, 4, sub))
            else:
                slots.append((name, voff, kind, elem, 4, self.child(kind, elem, value)))
        slots.sort(key=lambda s: (-s[4], s[1]))  # widest first: fewest padding bytes
        off, placed = 4, []
        for s in slots:
            off = _align(off, s[4])
            placed.append((s, off))
            off += s[4]
        inline = off
        widest = max([4] + [s[4] for s in slots])
        nslots = max([0] + [s[1] for s in slots]) // 2 - 1 if slots else 0
        vt = [0] * nslots
        for s, o in placed:
            vt[s[1] // 2 - 2] = o
        vtable = struct.pack(f"<HH{nslots}H", 4 + 2 * nslots, inline, *vt)
        vpos = self.vtables.get(vtable)
        if vpos is None:
            vpos = _align(self.cursor, 2)
            self.cursor = vpos + len(vtable)
            self.vtables[vtable] = vpos
            self.vt_bytes.append((vpos, vtable))
        t.pos = _align(self.cursor, widest)
        self.cursor = t.pos + inline
        self.tables.append((t, placed, vpos))
        for (name, voff, kind, elem, width, value), o in placed:
            if kind in ("table", "string", "vector"):
                self.queue.append(value)

    def run(self, root: Table) -> None:
        self.queue.append(root)
        while self.queue:
            self.place(self.queue.popleft())

    def encode(self) -> bytearray:
        buf = bytearray(self.cursor)
        struct.pack_into("<I", buf, 0, self.tables[0][0].pos)
        buf[4:8] = IDENTIFIER
        for pos, vt in self.vt_bytes:
            buf[pos:pos + len(vt)] = vt
        pack = struct.pack_into
        for t, placed, vpos in self.tables:
            p = t.pos
            pack("<i", buf, p, p - vpos)
            for (name, voff, kind, elem, width, value), o in placed:
                at = p + o
                if kind == "scalar":
                    pack(_FMT[elem], buf, at, value)
                else:  # a payload's vector starts at its length, 4 bytes before its bytes
                    pack("<I", buf, at, (value.pos - 4 if value.__class__ is Payload else value.pos) - at)
        for b in self.blobs:
            p = b.pos
            k = b.kind
            if k == "string":
                pack("<I", buf, p, len(b.items))
                buf[p + 4:p + 4 + len(b.items)] = b.items
                continue
            pack("<I", buf, p, len(b.items))
            at = p + 4
            if k == "vscalar":
                if b.items:
                    pack(f"<{len(b.items)}{_FMT[b.elem][1]}", buf, at, *b.items)
            elif k == "vstruct":
                size = (b.size - 4) // max(1, len(b.items)) if b.items else 0
                for item in b.items:
                    for (_, moff, mtype), v in zip(b.elem, item):
                        pack(_FMT[mtype], buf, at + moff, v)
                    at += size
            else:
                for child in b.items:
                    pack("<I", buf, at, child.pos - at)
                    at += 4
        return buf


def layout(root: Table, align: int) -> Layout:
    """Place ``root`` (an ``InferenceSession`` table) and everything it refers to; payload bytes start
    at multiples of ``align`` (a power of two; at least 4 in effect: a vector's length is 4-aligned).

    Unsupported (nothing written yet) when the buffer would pass :data:`MAX_SIZE`, with the size it needs.
    """
    p = _Placer()
    p.run(root)
    head_end = p.cursor
    a = max(4, align)
    cursor = head_end
    for pl in p.payloads:
        pl.pos = _align(cursor + 4, a) if pl.length else _align(cursor, 4) + 4  # no bytes: nothing to align
        cursor = pl.pos + pl.length
    if cursor > MAX_SIZE:
        raise FormatError(Kind.UNSUPPORTED, "InferenceSession", None,
                          f"the .ort file would need {cursor:,} bytes; flatbuffers' 32-bit offsets address at most "
                          f"{MAX_SIZE:,} (2 GiB): ONNX Runtime's format cannot hold this model")
    head = p.encode()
    return Layout(bytes(head), p.payloads, cursor)
