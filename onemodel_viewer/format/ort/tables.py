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
Scalars equal to their schema default are left out, as flatbuffers builders do. A table may have
several referrers (shared) when all of them are placed before it: breadth first, referrers in one
vector are. Strings are shared (one copy of each distinct string, as ``CreateSharedString`` does)
and placed after every table, before the payloads.
"""

from __future__ import annotations

import math
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
_FIELDS = {name: {f: (voff, kind, elem, default, _SIZE.get(elem, 4) if kind == "scalar" else 4)
                  for f, voff, kind, elem, default in fields} for name, fields in TABLES.items()}
"""Per table: field -> (vtable slot, kind, element, default, inline width), from :data:`.fbs.TABLES`."""


class Table:
    """One table: ``name`` in :data:`.fbs.TABLES`, ``fields`` by field name (absent = not written)."""

    __slots__ = ("name", "fields", "pos")

    def __init__(self, table: str, /, **fields) -> None:
        self.name = table
        self.fields = fields  # None values are left out when placed
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


_NO_DEFAULT = object()
"""Stands for "no default" in a field plan (sub-tables, vectors, strings are written whenever set)."""


def _align(n: int, a: int) -> int:
    return (n + a - 1) & ~(a - 1)


def _packer(fields: list[tuple]) -> tuple[struct.Struct, tuple]:
    """The inline table of ``fields`` (``(field, kind, elem, offset)`` by offset) as one ``struct``: its soffset to
    the vtable, then each field at its offset (zeros between); and ``(index, offset)`` of the uoffset fields."""
    fmt, at, refs = ["<i"], 4, []
    for i, (_f, kind, elem, off) in enumerate(fields):
        fmt.append("x" * (off - at))
        if kind == "scalar":
            fmt.append(_FMT[elem][1])
            at = off + _SIZE[elem]
        else:
            fmt.append("I")
            at = off + 4
            refs.append((i, off))
    return struct.Struct("".join(fmt)), tuple(refs)


class Layout:
    """The result: ``payloads`` in file order (their ``pos`` set), ``size`` (the whole buffer), ``head_size``
    and :attr:`head` (bytes 0..head_size: root offset, identifier, every table, vector and string), encoded
    at its first use (the writer copies payloads meanwhile)."""

    def __init__(self, placer: "_Placer", payloads: list[Payload], size: int) -> None:
        self._placer: "_Placer | None" = placer
        self._head: bytes | None = None
        self.head_size = placer.cursor
        self.payloads, self.size = payloads, size

    @property
    def head(self) -> bytes:
        if self._head is None:
            assert self._placer is not None
            self._head = bytes(self._placer.encode())
            self._placer = None
        return self._head


class _Placer:
    def __init__(self) -> None:
        self.cursor = 8  # root uoffset + file identifier
        self.queue: deque = deque()
        self.tables: list[tuple] = []  # (table, its shape, values in the shape's field order)
        self.shapes: dict[tuple, tuple] = {}
        self.blobs: list[_Blob] = []
        self.vtables: dict[bytes, int] = {}
        self.vt_bytes: list[tuple[int, bytes]] = []
        self.payloads: list[Payload] = []
        self.strings: dict = {}
        self.field_plans: dict[tuple, tuple] = {}

    def string(self, value) -> _Blob:
        """The one blob of this string (one copy of each distinct string, all placed after the tables)."""
        blob = self.strings.get(value)
        if blob is None:
            data = value.encode("utf-8") if value.__class__ is str else bytes(value)
            blob = self.strings[value] = _Blob("string", None, data, 5 + len(data), 4)
        return blob

    def child(self, kind: str, elem, value):
        """A placeable object for a field value (a Table as is, a _Blob for strings/vectors)."""
        if kind == "string":
            blob = self.strings.get(value)
            return blob if blob is not None else self.string(value)
        if kind == "table":
            return value
        if value.__class__ is Payload:
            return value
        n = len(value)
        if elem == "string":
            get = self.strings.get
            items = [get(x) or self.string(x) for x in value]
            return _Blob("vstring", None, items, 4 + 4 * n, 4)
        if elem[0] == "t":  # table:<T>
            return _Blob("vtable", None, value, 4 + 4 * n, 4)
        if elem[0] == "s":  # struct:<S>
            size, members = STRUCTS[elem[7:]]
            return _Blob("vstruct", members, value, 4 + size * n, 4)
        width = _SIZE[elem]
        return _Blob("vscalar", elem, value, 4 + width * n, 4 if width < 4 else width)

    def place(self, obj) -> None:
        if obj.pos:  # a shared table, placed at its first referrer's turn (every referrer is placed before it)
            return
        cls = obj.__class__
        if cls is Table:
            self.place_table(obj)
        elif cls is Payload:
            self.payloads.append(obj)
        else:
            self.place_blob(obj)

    def place_blob(self, obj: "_Blob") -> None:
        if obj.kind == "string":
            return  # placed after every table (see run)
        if obj.align > 4:  # elements aligned, after the 4-byte length
            obj.pos = _align(self.cursor + 4, obj.align) - 4
        else:
            obj.pos = (self.cursor + 3) & -4
        self.cursor = obj.pos + obj.size
        self.blobs.append(obj)
        if obj.kind == "vtable":
            self.queue.extend(obj.items)

    def shape(self, name: str, present: tuple) -> tuple:
        """The inline layout of table ``name`` with the fields ``present``: ``(fields, vtable pos, inline
        size, alignment)``, ``fields`` as ``(field, kind, elem, offset)`` widest first; computed once per shape."""
        key = (name, present)
        got = self.shapes.get(key)
        if got is not None:
            return got
        known = _FIELDS[name]
        slots = sorted(((known[f][4], known[f][0], f) for f in present), key=lambda s: (-s[0], s[1]))
        off, fields, vt = 4, [], {}
        for width, voff, f in slots:
            off = (off + width - 1) & -width
            kind = known[f][1]
            fields.append((f, "table" if kind == "union" else kind, known[f][2], off))
            vt[voff] = off
            off += width
        nslots = max(vt) // 2 - 1 if vt else 0
        vtable = struct.pack(f"<HH{nslots}H", 4 + 2 * nslots, off, *(vt.get(4 + 2 * i, 0) for i in range(nslots)))
        vpos = self.vtables.get(vtable)
        if vpos is None:
            vpos = (self.cursor + 1) & -2
            self.cursor = vpos + len(vtable)
            self.vtables[vtable] = vpos
            self.vt_bytes.append((vpos, vtable))
        widest = slots[0][0] if slots and slots[0][0] > 4 else 4
        got = self.shapes[key] = (tuple(fields), vpos, off, widest) + _packer(fields)
        return got

    def fields_of(self, name: str, names: tuple) -> tuple:
        """Per field of a table ``name`` given ``names`` (in that order): ``(field, drop-if-equal default or a
        marker, float32 default)``; computed once per table kind and field order."""
        key = (name, names)
        got = self.field_plans.get(key)
        if got is None:
            known = _FIELDS[name]
            plan = []
            for f in names:
                info = known[f]  # KeyError: a field ort.fbs lacks (a writer bug)
                scalar = info[1] == "scalar"
                plan.append((f, info[3] if scalar else _NO_DEFAULT, scalar and info[2] == "float32"))
            got = self.field_plans[key] = tuple(plan)
        return got

    def place_table(self, t: Table) -> None:
        fields = t.fields
        present = []
        for name, default, is_float in self.fields_of(t.name, tuple(fields)):
            value = fields[name]
            if value is None:
                continue
            if value == default and default is not _NO_DEFAULT and (not is_float or math.copysign(1.0, value) == 1.0):
                continue  # the default is not written (-0.0 is not the default 0.0)
            present.append(name)
        shape = self.shape(t.name, tuple(present))
        layout, vpos, size, widest = shape[:4]
        t.pos = (self.cursor + widest - 1) & -widest
        self.cursor = t.pos + size
        values = []
        queue = self.queue
        child = self.child
        for name, kind, elem, _off in layout:
            v = fields[name]
            if kind == "scalar":
                values.append(v)
                continue
            if kind == "table":
                v = v[1] if v.__class__ is tuple else v  # a union: (type code, table)
            else:
                v = child(kind, elem, v)
            values.append(v)
            queue.append(v)
        self.tables.append((t, shape, values))

    def run(self, root: Table) -> None:
        queue = self.queue
        queue.append(root)
        place_table, place_blob, payloads = self.place_table, self.place_blob, self.payloads
        while queue:
            obj = queue.popleft()
            if obj.pos:  # a shared table, placed at its first referrer's turn (every referrer is placed before it)
                continue
            cls = obj.__class__
            if cls is Table:
                place_table(obj)
            elif cls is Payload:
                payloads.append(obj)
            else:
                place_blob(obj)
        cursor = self.cursor
        for blob in self.strings.values():  # strings have no children: after all tables, every offset is forward
            blob.pos = cursor = (cursor + 3) & -4
            cursor += blob.size
            self.blobs.append(blob)
        self.cursor = cursor

    def encode(self) -> bytearray:
        buf = bytearray(self.cursor)
        struct.pack_into("<I", buf, 0, self.tables[0][0].pos)
        buf[4:8] = IDENTIFIER
        for pos, vt in self.vt_bytes:
            buf[pos:pos + len(vt)] = vt
        for t, shape, values in self.tables:
            p = t.pos
            for i, o in shape[5]:  # a payload's vector starts at its length, 4 bytes before its bytes
                v = values[i]
                values[i] = (v.pos - 4 if v.__class__ is Payload else v.pos) - p - o
            shape[4].pack_into(buf, p, p - shape[1], *values)
        pack = struct.pack_into
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
            elif b.items:
                pack(f"<{len(b.items)}I", buf, at, *[c.pos - at - 4 * j for j, c in enumerate(b.items)])
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
    return Layout(p, p.payloads, cursor)
