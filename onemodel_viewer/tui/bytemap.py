"""Who owns each byte of the file: header fields, manifest, padding, tensors, gaps.

Pure (no Textual); built once per document in O(tensors log tensors). The hex
view asks :meth:`ByteMap.runs` for the styled pieces of a line and
:meth:`ByteMap.owner_at` for the name under its cursor; the detail pane asks
:meth:`ByteMap.sharing` (through :class:`FileMaps`, which also holds the maps of an ONNX
model's external data files). Each query costs O((k + 1) log n) for the k tensors it
looks at, whatever the other tensors share (a tensor over the whole data region
used to make every query scan every tensor under it: issue 11).
"""

from __future__ import annotations

import bisect
import os
from itertools import compress
from dataclasses import dataclass

from ..format.document import HEADER_FIELDS, Document
from ..format.schema import Tensor, all_tensors
from ..format.storage import Storage


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
        elif doc.source == "ort":  # the flatbuffer's objects, named by owner
            from .ort_regions import ort_regions

            base.extend(ort_regions(doc, Region))
        elif self.size and doc.source == "onnx":
            base.append(Region(0, self.size, "onnx", "onnx protobuf"))
        elif self.size:  # no header read (bad magic, too short): bytes of no known kind
            base.append(Region(0, self.size, "none", "unrecognised bytes"))
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
        # a tree of maximum ends over the tensors in start order: level 0 the ends, each level
        # above the maximum of two below (built at C speed, one ``map`` per level)
        levels: list[list[int]] = [[r.end for r in tensors]] if tensors else []
        while levels and len(levels[-1]) > 1:
            lv = levels[-1]
            up = list(map(max, lv[0::2], lv[1::2]))
            if len(lv) % 2:
                up.append(lv[-1])
            levels.append(up)
        self._t_maxend = levels
        self._t_ends_sorted = sorted(levels[0]) if levels else []

    def base_at(self, offset: int) -> Region | None:
        i = bisect.bisect_right(self._base_starts, offset) - 1
        if i >= 0 and self.base[i].start <= offset < self.base[i].end:
            return self.base[i]
        return None

    def _reaching(self, after: int, hi: int, limit: int | None, descending: bool) -> list[int]:
        """Indices ``i < hi`` of the tensors ending past ``after``, at most ``limit``.

        A walk down the max-end tree that skips every subtree ending at or before ``after``:
        O((k + 1) log n) for k answers.
        """
        levels = self._t_maxend
        out: list[int] = []
        if not levels or hi <= 0:
            return out
        top = len(levels) - 1
        stack = [(top, 0)]
        while stack:
            j, i = stack.pop()
            if levels[j][i] <= after or (i << j) >= hi:
                continue
            if j == 0:
                out.append(i)
                if limit is not None and len(out) >= limit:
                    break
                continue
            a, b = 2 * i, 2 * i + 1
            below = levels[j - 1]
            if descending:  # the stack pops the last pushed first
                stack.append((j - 1, a))
                if b < len(below):
                    stack.append((j - 1, b))
            else:
                if b < len(below):
                    stack.append((j - 1, b))
                stack.append((j - 1, a))
        return out

    def tensors_at(self, offset: int, limit: int = 8) -> list[Region]:
        """Tensors whose bytes contain ``offset`` (several when tensors share bytes), the last to start first."""
        hi = bisect.bisect_right(self._t_starts, offset)
        return [self.tensors[i] for i in self._reaching(offset, hi, limit, True)]

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
        hi = bisect.bisect_left(self._t_starts, a1)
        if hi == 0:
            return []
        # of the tensors starting before a1, those ending by a0 (they all start before it) do not overlap
        k = hi - bisect.bisect_right(self._t_ends_sorted, a0)
        if k * 8 >= hi:  # most of them overlap: one filter over their ends, at C speed
            found = compress(range(hi), map(a0.__lt__, self._t_maxend[0][:hi]))
        else:
            found = self._reaching(a0, hi, None, False)
        regions = self.tensors
        return [r.tensor for r in (regions[i] for i in found) if r.tensor is not t]

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


class FileMaps:
    """The byte maps of one document: its own file's (:attr:`home`) and each external data file's.

    An ONNX model's external data files get their map on first use (the hex pane showing one, the
    detail pane asking what shares bytes with one of their tensors), once per file: the hex pane and
    the detail pane share them.
    """

    def __init__(self, doc: Document, home: ByteMap | None = None) -> None:
        self.doc = doc
        self._home = home
        self._external: dict[str, tuple[Storage, ByteMap]] = {}

    @property
    def home(self) -> ByteMap:
        """The map of the document's own file (built on first use when not given)."""
        if self._home is None:
            self._home = ByteMap(self.doc)
        return self._home

    def in_home(self, t: Tensor) -> bool:
        """True when ``t``'s bytes are in the document's own file."""
        return in_file(t, self.doc)

    def external(self, t: Tensor) -> tuple[Storage, ByteMap] | None:
        """(storage, map) of the file holding ``t``'s bytes, read as an external data file.

        None when they are in no file that can be shown (memory; a storage without a path).
        """
        storage = t.storage
        path = getattr(storage, "path", None)
        if path is None or not hasattr(storage, "size") or self.doc.model is None:
            return None
        key = os.path.abspath(path)
        known = self._external.get(key)
        if known is None:
            known = self._external[key] = (storage, ByteMap.for_external_file(path, storage.size, all_tensors(self.doc.model)))
        return known

    def sharing(self, t: Tensor) -> list[Tensor]:
        """Other tensors of ``t``'s own file whose bytes overlap ``t``'s (an external tensor's: of its weights file only)."""
        path = getattr(t.storage, "path", None)
        if path is not None and os.path.abspath(path) != os.path.abspath(self.doc.path):
            found = self.external(t)
            return found[1].sharing(t) if found is not None else []
        return self.home.sharing(t)
