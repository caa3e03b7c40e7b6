"""The verifying walk of an ORT flatbuffer: every offset and length checked before it is followed.

One declarative description (:mod:`.fbs`, ORT's ``ort.fbs`` as data) drives the walk, as
google/flatbuffers ``verifier.h`` does for generated code: :class:`Walker` checks a table's
soffset, its vtable (inside the buffer, 2-aligned, sizes even and at least 4), each present
field (inside the table, aligned), each offset it follows (non-zero, target inside the buffer,
aligned), each vector and string length (64-bit arithmetic, against the buffer), every string's
NUL terminator, union type codes, a depth limit on nested tables, a budget on the tables visited
and a budget on the whole walk's work (shared sub-tables and shared vectors cannot expand a small
file into millions of objects), and at most :data:`MAX_PROBLEMS` problems: diagnose mode is bounded
as strict mode is. Only then is a value decoded. The result is plain data: each table a ``dict`` of its present fields (``"@"``:
the table's offset, ``"@vt"``: its vtable's), strings as ``bytes``, scalar vectors as tuples,
``[uint8]`` vectors as ``(payload offset, length)`` (never read), float32 as their bit patterns.

Every object visited gets a byte span in :attr:`Walker.spans`: ``(start, length, kind,
owner)`` with kind ``root``, ``vtable``, ``table``, ``vector``, ``string`` or ``payload``, and
``owner`` the schema field path from the root table (``InferenceSession.model.graph.nodes[3]``).

Problems (through a :class:`~..reader.Reporter`: strict raises the first, diagnose records and
goes on) are ``Malformed`` at the path of the field whose bytes are wrong, offset = the bad bytes;
nesting beyond :data:`MAX_DEPTH`, more than the table budget or the work budget, and the problem
cap (diagnose mode) are ``Unsupported``, and the walk stops there. A defective
field is left out of its table's dict and its name recorded in ``"@bad"``, so the importer can
tell "absent" from "unreadable" (one problem per defect).
"""

from __future__ import annotations

import struct

from ..errors import Kind
from .fbs import STRUCTS, TABLES, UNIONS

MAX_DEPTH = 200
"""Tables open at once (root = 1). A graph nested in an attribute costs 3 levels (Graph, Node,
Attribute); the importer's own limit of 64 graph levels (as for OneModel) is reached first."""
TABLE_BUDGET_MIN = 4096
"""The table budget is ``max(TABLE_BUDGET_MIN, file size // 4)``: distinct tables take at least
4 bytes each, so a file visiting more has shared sub-tables expanding it."""
WORK_BUDGET_MIN = 1 << 16
"""The work budget is ``max(WORK_BUDGET_MIN, 2 * file size)`` units. A table costs 1 + its vtable's
slots, an offset vector 1 + its elements, a struct vector 1 + its elements, a scalar vector
1 + elements / 8, a string or byte vector 1. A file's own objects are disjoint and each costs at
most its byte count, so a walk costing more follows shared objects over and over (one node's
4000-entry input list under 4000 node offsets: 16 million string checks in a 32 KiB file)."""
MAX_PROBLEMS = 10_000
"""Problems one walk reports before it stops (diagnose mode: a shared vector of bad offsets under
shared tables would otherwise report the same defects millions of times)."""
IDENTIFIER = b"ORTM"
ROOT = "InferenceSession"

_SCALAR = {
    "bool": ("<?", 1), "int8": ("<b", 1), "uint8": ("<B", 1), "int16": ("<h", 2), "uint16": ("<H", 2),
    "int32": ("<i", 4), "uint32": ("<I", 4), "int64": ("<q", 8), "uint64": ("<Q", 8),
    "float32": ("<I", 4),  # the bit pattern: NaN payloads and -0.0 survive
    "float64": ("<Q", 8),
}
_VEC_CODE = {"bool": "?", "int8": "b", "uint8": "B", "int16": "h", "uint16": "H", "int32": "i", "uint32": "I",
             "int64": "q", "uint64": "Q", "float32": "I", "float64": "Q"}

_u32 = struct.Struct("<I").unpack_from
_i32 = struct.Struct("<i").unpack_from
_u16x2 = struct.Struct("<HH").unpack_from
_u16 = struct.Struct("<H").unpack_from

# per table: ((field, voffset, kind code, info), ...) compiled from fbs.TABLES
_K_SCALAR, _K_STRING, _K_TABLE, _K_UNION, _K_VSCALAR, _K_VSTRING, _K_VTABLE, _K_VSTRUCT, _K_VBYTES = range(9)


def _compile() -> dict:
    out = {}
    for tname, fields in TABLES.items():
        comp = []
        for name, vo, kind, elem, default in fields:
            if kind == "scalar":
                fmt, size = _SCALAR[elem]
                comp.append((name, vo, _K_SCALAR, (struct.Struct(fmt).unpack_from, size)))
            elif kind == "string":
                comp.append((name, vo, _K_STRING, None))
            elif kind == "table":
                comp.append((name, vo, _K_TABLE, elem))
            elif kind == "union":
                comp.append((name, vo, _K_UNION, elem))
            elif kind == "struct":  # pragma: no cover - ort.fbs has no struct-valued table field
                raise NotImplementedError(f"{tname}.{name}: struct field")
            elif elem == "string":
                comp.append((name, vo, _K_VSTRING, None))
            elif elem.startswith("table:"):
                comp.append((name, vo, _K_VTABLE, elem[6:]))
            elif elem.startswith("struct:"):
                size, sfields = STRUCTS[elem[7:]]
                fmt = "<" + "".join(_VEC_CODE[t] for _n, _o, t in sfields)
                comp.append((name, vo, _K_VSTRUCT, (size, struct.Struct(fmt), tuple(n for n, _o, _t in sfields))))
            elif elem == "uint8":
                comp.append((name, vo, _K_VBYTES, None))
            else:
                comp.append((name, vo, _K_VSCALAR, (_VEC_CODE[elem], _SCALAR[elem][1])))
        out[tname] = tuple(comp)
    return out


_TABLES = _compile()


class Walker:
    """One verifying walk over ``buf`` (``bytes`` or a read-only ``mmap``) of ``size`` bytes.

    ``need(offset, length)``, when given, is told of the bytes the walk is about to read (a table, its
    vtable, a string, a vector of scalars, structs or offsets; never a ``[uint8]`` payload) before it
    reads them: a file at a URL is walked over a buffer that holds only what was fetched
    (:class:`..remote.lazy.LazyCopy`), its payloads fetched when used. ``hint(offsets)`` is told where
    the tables of a vector are before the walk visits them one by one (fetched together).
    """

    def __init__(self, buf, size: int, report, *, max_depth: int = MAX_DEPTH, budget: int | None = None,
                 need=None, hint=None, work_budget: int | None = None) -> None:
        self.buf = buf
        self.need = need
        self.hint = hint
        self.size = size
        self.report = report
        self.max_depth = max_depth
        self.budget = max(TABLE_BUDGET_MIN, size // 4) if budget is None else budget
        self.work_budget = max(WORK_BUDGET_MIN, 2 * size) if work_budget is None else work_budget
        self.tables = 0
        self.work = 0
        self.problem_count = 0
        self.exhausted = False
        self.spans: list[tuple[int, int, str, str]] = []
        self._vtables: set[int] = set()

    # -- reporting
    def bad(self, kind: Kind, where: str, offset: int | None, message: str) -> None:
        self.problem_count += 1
        self.report(kind, where, offset, message)  # strict mode raises here
        if self.problem_count >= MAX_PROBLEMS and not self.exhausted:
            self.exhausted = True
            self.report(Kind.UNSUPPORTED, where, offset, f"{MAX_PROBLEMS} problems found: the walk stops here")

    def spend(self, units: int, where: str, offset: int) -> bool:
        """Charge ``units`` of work; False (and one Unsupported problem) once the work budget is passed."""
        self.work += units
        if self.work > self.work_budget and not self.exhausted:
            self.exhausted = True
            self.bad(Kind.UNSUPPORTED, where, offset,
                     f"the walk passed its work budget ({self.work_budget} units for a {self.size}-byte file): "
                     "shared tables or vectors expand it")
        return not self.exhausted

    # -- the root
    def root(self) -> dict | None:
        size = self.size
        if size < 8:
            self.bad(Kind.MALFORMED, "file", 0, f"{size} bytes: too short for a flatbuffer (root offset + identifier = 8 bytes)")
            return None
        if self.need is not None:
            self.need(0, 8)
        ident = bytes(self.buf[4:8])
        if ident != IDENTIFIER:
            self.bad(Kind.MALFORMED, "file_identifier", 4, f"file identifier {ident!r}, not {IDENTIFIER!r}: not an ORT model")
            return None
        self.spans.append((0, 8, "root", "root offset + file identifier"))
        off = _u32(self.buf, 0)[0]
        if not self._target_ok(0, off, ROOT, 4):
            return None
        return self.table(off, ROOT, ROOT, 1)

    def _target_ok(self, at: int, rel: int, where: str, align: int) -> bool:
        """A uoffset ``rel`` stored at ``at``: non-zero, target + 4 inside the buffer, aligned."""
        target = at + rel
        if rel == 0 or rel >= 1 << 31:
            self.bad(Kind.MALFORMED, where, at, f"offset {rel} at {at} is not a forward offset")
            return False
        if target + 4 > self.size:
            self.bad(Kind.MALFORMED, where, at, f"offset {rel} at {at} points to {target}, outside the {self.size}-byte buffer")
            return False
        if target % align:
            self.bad(Kind.MALFORMED, where, at, f"offset {rel} at {at} points to {target}, not {align}-byte aligned")
            return False
        return True

    def _uoffset(self, at: int, where: str, align: int = 4) -> int | None:
        """The target of the uoffset stored at ``at`` (already known to be inside its table)."""
        rel = _u32(self.buf, at)[0]
        return at + rel if self._target_ok(at, rel, where, align) else None

    # -- tables
    def table(self, pos: int, tname: str, where: str, depth: int) -> dict | None:
        if self.exhausted:
            return None
        if depth > self.max_depth:
            self.bad(Kind.UNSUPPORTED, where, pos, f"tables nested more than {self.max_depth} deep")
            return None
        self.tables += 1
        if self.tables > self.budget:
            self.exhausted = True
            self.bad(Kind.UNSUPPORTED, where, pos,
                     f"more than {self.budget} tables visited in a {self.size}-byte file: shared sub-tables expand it")
            return None
        buf, size, need = self.buf, self.size, self.need
        if need is not None:
            need(pos, 4)
        vt = pos - _i32(buf, pos)[0]
        if vt < 0 or vt + 4 > size:
            self.bad(Kind.MALFORMED, where, pos, f"vtable at {vt} is outside the {size}-byte buffer")
            return None
        if vt % 2:
            self.bad(Kind.MALFORMED, where, pos, f"vtable at {vt} is not 2-byte aligned")
            return None
        if need is not None:
            need(vt, 4)
        vsize, tsize = _u16x2(buf, vt)
        if vsize < 4 or vsize % 2 or vt + vsize > size:
            self.bad(Kind.MALFORMED, where, vt, f"vtable size {vsize} at {vt} is odd, below 4 or past the end of the buffer")
            return None
        if tsize < 4 or pos + tsize > size:
            self.bad(Kind.MALFORMED, where, vt + 2, f"table size {tsize} at {pos} is below 4 or past the end of the buffer")
            return None
        if not self.spend(1 + vsize // 2, where, pos):
            return None
        if need is not None:
            need(vt, vsize)
            need(pos, tsize)
        if vt not in self._vtables:
            self._vtables.add(vt)
            self.spans.append((vt, vsize, "vtable", f"vtable of {where}"))
        self.spans.append((pos, tsize, "table", where))
        out: dict = {"@": pos, "@vt": vt}
        bad: list[str] | None = None
        for name, vo, kind, info in _TABLES[tname]:
            if vo >= vsize:
                continue
            fo = _u16(buf, vt + vo)[0]
            if not fo:
                continue
            at = pos + fo
            fsize = info[1] if kind == _K_SCALAR else 4
            if fo + fsize > tsize or at % (fsize if fsize < 8 else 8):
                if fo + fsize > tsize:
                    self.bad(Kind.MALFORMED, f"{where}.{name}", vt + vo,
                             f"field at table offset {fo} ({fsize} bytes) is outside the {tsize}-byte table at {pos}")
                else:
                    self.bad(Kind.MALFORMED, f"{where}.{name}", at, f"field at {at} is not {fsize}-byte aligned")
                bad = (bad or []) + [name]
                continue
            if kind == _K_SCALAR:
                out[name] = info[0](buf, at)[0]
                continue
            w = f"{where}.{name}"
            if kind == _K_UNION:
                code = out.get(name + "_type", 0)
                members = UNIONS[info]
                if code == 0:
                    continue
                member = members.get(code)
                if member is None:
                    tfo = _u16(buf, vt + vo - 2)[0]  # the type byte is the slot before
                    self.bad(Kind.MALFORMED, w + "_type", pos + tfo if tfo else at,
                             f"union type {code} is not one of {info}'s ({sorted(members)})")
                    bad = (bad or []) + [name]
                    continue
                target = self._uoffset(at, w)
                value = None if target is None else self.table(target, member, w, depth + 1)
                if value is None:
                    bad = (bad or []) + [name]
                else:
                    value["@type"] = member
                    out[name] = value
                continue
            target = self._uoffset(at, w)
            if target is None:
                bad = (bad or []) + [name]
                continue
            if kind == _K_STRING:
                value = self.string(target, w)
            elif kind == _K_TABLE:
                value = self.table(target, info, w, depth + 1)
            else:
                value = self.vector(target, kind, info, w, depth)
            if value is None:
                bad = (bad or []) + [name]
            else:
                out[name] = value
        if bad:
            out["@bad"] = bad
        return out

    # -- strings and vectors
    def _length(self, pos: int, elem_size: int, where: str, what: str, elements: bool = True) -> int | None:
        """The element count at ``pos``; the elements are fetched (``need``) unless ``elements`` is False."""
        need = self.need
        if need is not None:
            need(pos, 4)
        n = _u32(self.buf, pos)[0]
        end = pos + 4 + n * elem_size  # Python ints: no overflow, compared before any slice
        if end > self.size:
            self.bad(Kind.MALFORMED, where, pos, f"{what} of {n} elements at {pos} ends at {end}, past the {self.size}-byte buffer")
            return None
        if need is not None and elements:
            need(pos + 4, min(n * elem_size + 1, self.size - pos - 4))  # a string's NUL too
        return n

    def string(self, pos: int, where: str) -> bytes | None:
        if not self.spend(1, where, pos):
            return None
        n = self._length(pos, 1, where, "string")
        if n is None:
            return None
        end = pos + 4 + n
        if end >= self.size or self.buf[end] != 0:
            self.bad(Kind.MALFORMED, where, end, f"string of {n} bytes at {pos} has no NUL terminator")
            return None
        self.spans.append((pos, n + 5, "string", where))
        return bytes(self.buf[pos + 4 : end])

    def vector(self, pos: int, kind: int, info, where: str, depth: int):
        buf = self.buf
        if self.exhausted:
            return None
        if kind == _K_VBYTES:
            n = self._length(pos, 1, where, "vector", elements=False)
            if n is None:
                return None
            self.spans.append((pos, 4, "vector", where))
            if n:
                self.spans.append((pos + 4, n, "payload", where))
            return (pos + 4, n)
        if kind == _K_VSCALAR:
            code, es = info
            n = self._length(pos, es, where, "vector")
            if n is None or not self.spend(1 + n // 8, where, pos):
                return None
            if es == 8 and (pos + 4) % 8 and n:
                self.bad(Kind.MALFORMED, where, pos + 4, f"{n} 8-byte elements at {pos + 4}, not 8-byte aligned")
                return None
            self.spans.append((pos, 4 + n * es, "vector", where))
            return struct.unpack_from(f"<{n}{code}", buf, pos + 4)
        if kind == _K_VSTRUCT:
            es, st, names = info
            n = self._length(pos, es, where, "vector")
            if n is None or not self.spend(1 + n, where, pos):
                return None
            self.spans.append((pos, 4 + n * es, "vector", where))
            return tuple(dict(zip(names, st.unpack_from(buf, pos + 4 + i * es))) for i in range(n))
        n = self._length(pos, 4, where, "vector")
        if n is None or not self.spend(1 + n, where, pos):
            return None
        self.spans.append((pos, 4 + 4 * n, "vector", where))
        if self.hint is not None and n > 1 and kind == _K_VTABLE:  # where the tables are (checked when visited)
            self.hint([pos + 4 + 4 * i + _u32(buf, pos + 4 + 4 * i)[0] for i in range(n)])
        out = []
        at = pos + 4
        for i in range(n):
            w = f"{where}[{i}]"
            target = self._uoffset(at, w)
            at += 4
            if target is None:
                out.append(None)
            elif kind == _K_VSTRING:
                out.append(self.string(target, w))
            else:
                out.append(self.table(target, info, w, depth + 1))
            if self.exhausted:
                break
        return out
