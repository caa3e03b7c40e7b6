"""Who owns each byte of the file: header fields, manifest, padding, tensors, gaps.

Pure (no Textual); built once per document in O(tensors log tensors). The hex
view asks :meth:`ByteMap.spans` for the styled pieces of a line and
:meth:`ByteMap.owner_at` for the name under its cursor.
"""

from __future__ import annotations

import bisect
import os
from dataclasses import dataclass

from ..format.document import HEADER_FIELDS, Document
from ..format.schema import Tensor, all_tensors


@dataclass(frozen=True, slots=True)
class Region:
    """A byte range ``[start, end)`` and what it is."""

    start: int
    end: int
    kind: str
    """``header``, ``manifest``, ``padding``, ``data``, ``tensor``, ``tail``."""
    name: str = ""
    """Header field name, or tensor name."""
    tensor: Tensor | None = None
    index: int = 0
    """Running number of the tensor (alternating colours)."""


def in_file(t: Tensor, doc: Document) -> bool:
    """True when ``t``'s bytes are in the document's own file (not memory, not an external data file)."""
    if t.storage is None:
        return False
    if doc.storage is not None:
        return t.storage is doc.storage
    path = getattr(t.storage, "path", None)
    return path is not None and os.path.abspath(path) == os.path.abspath(doc.path)


def _tensor_regions(tensors: list[Tensor], keep) -> list[Region]:
    """A region per distinct tensor with bytes (not strings, not empty) for which ``keep(t)`` holds."""
    out: list[Region] = []
    seen: set[int] = set()
    for t in tensors:
        if id(t) in seen or t.is_string or t.file_offset is None or t.length <= 0:
            continue
        seen.add(id(t))
        if keep(t):
            out.append(Region(t.file_offset, t.file_offset + t.length, "tensor", t.name, t, len(out)))
    return out


class ByteMap:
    """Regions of one file, sorted by start."""

    def __init__(self, doc: Document) -> None:
        self.size = doc.size
        base: list[Region] = []
        tensors: list[Region] = []
        if doc.source == "onemodel" and doc.header is not None:
            for name, off, size in HEADER_FIELDS:
                if off < self.size:
                    base.append(Region(off, min(off + size, self.size), "header", name))
            ms = doc.manifest_span
            if ms is not None:
                m0, mlen = ms
                m1 = min(m0 + mlen, self.size)
                if m0 < m1:
                    base.append(Region(m0, m1, "manifest", "manifest"))
                ds = doc.data_span
                d0 = ds[0] if ds is not None else min(self.size, m1 + (-m1 % 64))
                if m1 < d0:
                    base.append(Region(m1, min(d0, self.size), "padding", "padding"))
            ds = doc.data_span
            if ds is not None:
                d0, dlen = ds
                d1 = min(d0 + dlen, self.size)
                if d0 < d1:
                    base.append(Region(d0, d1, "data", "data region"))
                if d1 < self.size:
                    base.append(Region(d1, self.size, "tail", "past data region"))
        elif self.size:
            base.append(Region(0, self.size, "onnx", "onnx protobuf"))
        if doc.model is not None:
            tensors = _tensor_regions(all_tensors(doc.model), lambda t: in_file(t, doc))
        self._index(base, tensors)

    @classmethod
    def for_external_file(cls, path: str, size: int, tensors: list[Tensor]) -> "ByteMap":
        """The map of an ONNX external data file: the tensors of ``tensors`` whose bytes are in it."""
        self = cls.__new__(cls)
        self.size = size
        self.path = path
        base = [Region(0, size, "external", os.path.basename(path))] if size else []
        target = os.path.abspath(path)

        def here(t: Tensor) -> bool:
            p = getattr(t.storage, "path", None)
            return p is not None and os.path.abspath(p) == target

        self._index(base, _tensor_regions(tensors, here))
        return self

    path: str | None = None
    """The file the map describes when it is not the document's own (external data)."""

    def _index(self, base: list[Region], tensors: list[Region]) -> None:
        base.sort(key=lambda r: r.start)
        tensors.sort(key=lambda r: (r.start, r.end))
        self.base = base
        self._base_starts = [r.start for r in base]
        self.tensors = tensors
        self._t_starts = [r.start for r in tensors]
        # running maximum of ends, so "which tensors contain x" is a bounded backward scan
        self._t_maxend: list[int] = []
        m = 0
        for r in tensors:
            m = max(m, r.end)
            self._t_maxend.append(m)

    def base_at(self, offset: int) -> Region | None:
        i = bisect.bisect_right(self._base_starts, offset) - 1
        if i >= 0 and self.base[i].start <= offset < self.base[i].end:
            return self.base[i]
        return None

    def tensors_at(self, offset: int, limit: int = 8) -> list[Region]:
        """Tensors whose bytes contain ``offset`` (several when tensors share bytes)."""
        out: list[Region] = []
        i = bisect.bisect_right(self._t_starts, offset) - 1
        while i >= 0 and self._t_maxend[i] > offset and len(out) < limit:
            r = self.tensors[i]
            if r.start <= offset < r.end:
                out.append(r)
            i -= 1
        return out

    def owner_at(self, offset: int) -> str:
        """A short description of the byte at ``offset`` (plain string; names not yet made safe)."""
        if not 0 <= offset < self.size:
            return "past end of file"
        ts = self.tensors_at(offset)
        if ts:
            r = ts[0]
            more = f" (+{len(ts) - 1} sharing)" if len(ts) > 1 else ""
            return f"tensor {r.name} +{offset - r.start:,}{more}"
        b = self.base_at(offset)
        if b is None:
            return "unowned"
        if b.kind == "header":
            return f"header.{b.name} +{offset - b.start}"
        if b.kind == "data":
            return "data region: gap (no tensor)"
        if b.kind == "external":
            return f"{b.name} +{offset:,} (no tensor)"
        return f"{b.name} +{offset - b.start:,}"

    def sharing(self, t: Tensor) -> list[Tensor]:
        """Other tensors whose byte range overlaps ``t``'s."""
        if t.file_offset is None or t.length <= 0:
            return []
        a0, a1 = t.file_offset, t.file_offset + t.length
        out = []
        hi = bisect.bisect_left(self._t_starts, a1)
        for i in range(hi - 1, -1, -1):
            if self._t_maxend[i] <= a0:
                break
            r = self.tensors[i]
            if r.tensor is not t and r.start < a1 and r.end > a0:
                out.append(r.tensor)
        out.reverse()
        return out

    def style_key(self, offset: int) -> tuple[str, int]:
        """(kind, colour index) for one byte: the hex view's colour of it."""
        ts = self.tensors_at(offset, limit=2)
        if ts:
            return ("overlap", 0) if len(ts) > 1 else ("tensor", ts[0].index % 2)
        b = self.base_at(offset)
        if b is None:
            return ("none", 0)
        return (b.kind, 0)

    def runs(self, start: int, end: int) -> list[tuple[int, int, tuple[str, int]]]:
        """``[start, end)`` cut into runs of equal :meth:`style_key`: (run_start, run_end, key)."""
        out: list[tuple[int, int, tuple[str, int]]] = []
        cur = start
        while cur < end:
            key = self.style_key(cur)
            nxt = self._next_boundary(cur, end)
            if out and out[-1][2] == key and out[-1][1] == cur:
                out[-1] = (out[-1][0], nxt, key)
            else:
                out.append((cur, nxt, key))
            cur = nxt
        return out

    def _next_boundary(self, offset: int, limit: int) -> int:
        """The next offset after ``offset`` (at most ``limit``) where ownership may change."""
        nxt = limit
        i = bisect.bisect_right(self._base_starts, offset)
        if i < len(self.base):
            nxt = min(nxt, self.base[i].start)
        b = self.base_at(offset)
        if b is not None:
            nxt = min(nxt, b.end)
        j = bisect.bisect_right(self._t_starts, offset)
        if j < len(self.tensors):
            nxt = min(nxt, self.tensors[j].start)
        for r in self.tensors_at(offset, limit=4):
            nxt = min(nxt, r.end)
        return max(nxt, offset + 1)

    def label_at_line(self, start: int, end: int) -> str:
        """Annotation for a hex line ``[start, end)``: header field names or the tensor starting there."""
        b = self.base_at(start)
        if b is not None and b.kind == "header":
            names = []
            for r in self.base:
                if r.kind == "header" and r.start < end and r.end > start:
                    names.append(r.name)
            return " ".join(names)
        j = bisect.bisect_left(self._t_starts, start)
        if j < len(self.tensors) and self.tensors[j].start < end:
            return "▶ " + self.tensors[j].name
        if b is not None and b.start >= start and b.start < end:
            return "▶ " + b.name
        return ""
