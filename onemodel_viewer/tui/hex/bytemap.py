"""Who owns each byte of the file, as the hex pane shows it: header fields, manifest, padding, tensors, gaps.

Pure (no Textual). The tensors' part is :class:`~onemodel_viewer.analysis.layout.tensor_spans.TensorSpans`,
the same byte ranges :func:`~onemodel_viewer.analysis.layout.onemodel.layout` sweeps into extents: which
tensors hold a byte and which share bytes are answered there, once for the viewer and ``--check``.
This module adds the regions around them (header fields, manifest, padding, data region, bytes past
it; an ``.ort`` file's flatbuffer objects; an ONNX or external data file as a whole), each a
:class:`~onemodel_viewer.analysis.layout.spans.Span` (the record of every byte map), and the hex
view's colours: :meth:`ByteMap.runs` gives the styled pieces of a line, :meth:`ByteMap.owner_at` the
name under its cursor, :meth:`ByteMap.sharing` the detail pane's "shares bytes with" (through
:class:`FileMaps`, which also holds the maps of an ONNX model's external data files). Built once per
file in O(tensors log tensors); each query costs O((k + 1) log n) for the k tensors it looks at.
"""

from __future__ import annotations

import bisect
import os

from ...analysis.layout.spans import Span
from ...analysis.layout.tensor_spans import TensorSpans, in_file
from ...format.document import HEADER_FIELDS, Document
from ...format.errors import FormatError
from ...format.schema import Tensor, all_tensors
from ...format.storage import Storage

__all__ = ["ByteMap", "FileMaps", "in_file"]


class ByteMap:
    """Regions of one file, sorted by start, over the :class:`TensorSpans` of its tensors."""

    def __init__(self, doc: Document, tensors: bool = True) -> None:
        """``tensors`` False: the regions only, no tensor owns a byte (a first screen's map, before the
        document's node checks: 10^5 tensors, ~70 ms with the first look-up)."""
        self.size = doc.size
        base: list[Span] = []
        if doc.source == "onemodel" and doc.header is not None:
            for name, off, size in HEADER_FIELDS:
                if off < self.size:
                    base.append(Span(off, min(off + size, self.size), "header", (name,)))
            ms = doc.manifest_span
            if ms is not None:
                m0, mlen = ms
                m1 = min(m0 + mlen, self.size)
                if m0 < m1:
                    base.append(Span(m0, m1, "manifest", ("manifest",)))
                ds = doc.data_span
                d0 = ds[0] if ds is not None else min(self.size, m1 + (-m1 % 64))
                if m1 < d0:
                    base.append(Span(m1, min(d0, self.size), "padding", ("padding",)))
            ds = doc.data_span
            if ds is not None:
                d0, dlen = ds
                d1 = min(d0 + dlen, self.size)
                if d0 < d1:
                    base.append(Span(d0, d1, "data", ("data region",)))
                if d1 < self.size:
                    base.append(Span(d1, self.size, "tail", ("past data region",)))
        elif doc.source == "ort":  # the flatbuffer's objects, named by owner
            from ..ort.regions import ort_regions

            base.extend(ort_regions(doc))
        elif self.size and doc.source == "onnx":
            base.append(Span(0, self.size, "onnx", ("onnx protobuf",)))
        elif self.size:  # no header read (bad magic, too short): bytes of no known kind
            base.append(Span(0, self.size, "none", ("unrecognised bytes",)))
        if doc.model is None or not tensors:
            spans = TensorSpans(())
        elif doc.storage is not None:  # in the document's file: viewing its storage
            spans = TensorSpans(all_tensors(doc.model), storage=doc.storage)
        else:
            spans = TensorSpans(all_tensors(doc.model), lambda t: in_file(t, doc))
        self._index(base, spans)

    @classmethod
    def for_external_file(cls, path: str, size: int, tensors: list[Tensor]) -> "ByteMap":
        """The map of an ONNX external data file: the tensors of ``tensors`` whose bytes are in it."""
        self = cls.__new__(cls)
        self.size = size
        self.path = path
        base = [Span(0, size, "external", (os.path.basename(path),))] if size else []
        target = os.path.abspath(path)

        def here(t: Tensor) -> bool:
            p = getattr(t.storage, "path", None)
            return p is not None and os.path.abspath(p) == target

        self._index(base, TensorSpans(tensors, here))
        return self

    path: str | None = None
    """The file the map describes when it is not the document's own (external data)."""

    def _index(self, base: list[Span], spans: TensorSpans) -> None:
        base.sort(key=lambda r: r.start)
        self.base = base
        self._base_starts = [r.start for r in base]
        self.spans = spans
        """The tensors' byte ranges (the one sharing computation)."""

    def base_at(self, offset: int) -> Span | None:
        i = bisect.bisect_right(self._base_starts, offset) - 1
        if i >= 0 and self.base[i].start <= offset < self.base[i].end:
            return self.base[i]
        return None

    def tensors_at(self, offset: int, limit: int = 8) -> list[Tensor]:
        """Tensors whose bytes contain ``offset`` (several when tensors share bytes), the last to start first."""
        tensors = self.spans.tensors
        return [tensors[i] for i in self.spans.holding(offset, limit)]

    def owner_at(self, offset: int) -> str:
        """A short description of the byte at ``offset`` (plain string; names not yet made safe)."""
        if not 0 <= offset < self.size:
            return "past end of file"
        held = self.spans.holding(offset)
        if held:
            i = held[0]
            more = f" (+{len(held) - 1} sharing)" if len(held) > 1 else ""
            return f"tensor {self.spans.tensors[i].name} +{offset - self.spans.starts[i]:,}{more}"
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
        return self.spans.sharing(t)

    def style_key(self, offset: int) -> tuple[str, int]:
        """(kind, colour index) for one byte: the hex view's colour of it."""
        held = self.spans.holding(offset, limit=2)
        if held:
            return ("overlap", 0) if len(held) > 1 else ("tensor", self.spans.order[held[0]] % 2)
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
        sp = self.spans
        j = bisect.bisect_right(sp.starts, offset)
        if j < len(sp):
            nxt = min(nxt, sp.starts[j])
        for k in sp.holding(offset, limit=4):
            nxt = min(nxt, sp.ends[k])
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
        sp = self.spans
        j = bisect.bisect_left(sp.starts, start)
        if j < len(sp) and sp.starts[j] < end:
            return "▶ " + sp.tensors[j].name
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

    def file_storage(self) -> Storage | None:
        """The document's own file as a storage, for the hex pane (None: it cannot be read).

        ONNX: the mapping its tensors already view, else the file mapped for the pane.
        """
        storage = self.doc.storage
        if storage is None and self.doc.source != "onemodel":
            storage = next((t.storage for t in self.home.spans.tensors[:1]), None)
            if storage is None:
                try:
                    from ...format.storage import FileStorage

                    storage = FileStorage(self.doc.path)
                except FormatError:
                    storage = None
        return storage

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
