"""Who owns each byte of a OneModel file, and the findings that follow from it.

:func:`layout` partitions the file into sorted, non-overlapping extents (:class:`~.spans.Span`\\ s):

=============  ================================================================================
kind           bytes
=============  ================================================================================
``header``     the 64-byte header
``manifest``   the manifest
``padding``    after the manifest up to ``data_offset``; after a tensor up to the next multiple
               of 64 (alignment padding, which should be zero)
``tensor``     owned by exactly one tensor
``overlap``    owned by two or more tensors (``names``/``wheres`` list them, ``owners`` counts)
``gap``        inside the data region, owned by no tensor and not alignment padding
``tail``       after the last tensor's last byte (the writer ends the region there)
=============  ================================================================================

Zero-length tensors own no bytes: they are listed in :attr:`Layout.empties` and returned by
:meth:`Layout.owner_at` at their offset. ``owner_at`` is a bisect: O(log n) per call, plus the
zero-length tensors it returns. Every pass over the whole file (the sweep below, the findings) is
O(n log n) in the tensors, whatever they share: many empty tensors at one offset or many tensors
over the same bytes cost no per-tensor list of the others (issue 11). The extents are swept from
the data region's :class:`~.tensor_spans.TensorSpans` (the tensors' byte ranges, the ones the
viewer's byte map colours): :meth:`Layout.sharing` and :meth:`Layout.tensors_at` answer from it.

Bytes are read only to set ``nonzero`` on padding (always: it is at most 63 bytes per tensor,
plus the manifest padding, scanned in chunks) and on gaps/tails up to ``GAP_SCAN_LIMIT`` bytes
each (``None`` beyond: unknown). No numpy.

:func:`file_findings` derives the findings that need the layout or the writer:
``nonzero-padding``, ``unowned-bytes``, ``shared-bytes``, ``noncanonical-manifest``.
The reader itself reports the cheap ones at open time (``duplicate-key``,
``missing-graph-array``, ``out-of-order``, ``wide-data-offset``); :func:`all_findings` returns both.
"""

from __future__ import annotations

import bisect
import os
import threading
from dataclasses import dataclass, field

from ...format.document import HEADER_SIZE, Document
from ...format.errors import Finding, FormatError
from ...format.schema import Tensor, all_tensors
from .spans import Span
from .tensor_spans import TensorSpans

ALIGN = 64
MAX_NAMES = 64
"""Owners listed per extent (``owners`` keeps the real count)."""
GAP_SCAN_LIMIT = 16 << 20
CHUNK = 1 << 20
MAX_FINDINGS_PER_CODE = 100


@dataclass(frozen=True, slots=True)
class Layout:
    """The byte map of one OneModel file: its extents, its zero-length tensors, the tensors' spans."""

    extents: tuple[Span, ...]
    """Non-empty extents, sorted, covering ``[0, size)`` without overlap."""
    size: int
    empties: tuple[Span, ...] = ()
    """Zero-length tensors (start == end), sorted by offset."""
    _starts: tuple[int, ...] = field(default=(), repr=False)
    _empty_starts: tuple[int, ...] = field(default=(), repr=False)
    tensors: TensorSpans = field(default_factory=lambda: TensorSpans(()), repr=False, compare=False)
    """The data region's tensors with bytes, the spans the extents were swept from."""

    def sharing(self, t: Tensor) -> list[Tensor]:
        """The other tensors whose bytes overlap ``t``'s (those in its ``overlap`` extents), in start order."""
        return self.tensors.sharing(t)

    def tensors_at(self, offset: int, limit: int | None = 8) -> list[Tensor]:
        """The tensors holding the byte at ``offset``, the last to start first."""
        sp = self.tensors
        return [sp.tensors[i] for i in sp.holding(offset, limit)]

    def owner_at(self, offset: int) -> list[Span]:
        """Extents at ``offset``: the one containing it, plus zero-length tensors there.

        O(log n + k) for the k zero-length tensors returned: a whole-file pass must not call it per
        empty tensor (10^5 of them at one offset made :func:`file_findings` quadratic).
        """
        out: list[Span] = []
        i = bisect.bisect_right(self._starts, offset) - 1
        if 0 <= i < len(self.extents) and self.extents[i].start <= offset < self.extents[i].end:
            out.append(self.extents[i])
        j = bisect.bisect_left(self._empty_starts, offset)
        while j < len(self.empties) and self.empties[j].start == offset:
            out.append(self.empties[j])
            j += 1
        return out

    def of_kind(self, *kinds: str) -> list[Span]:
        return [e for e in self.extents if e.kind in kinds]


class _Scanner:
    """Zero checks of padding/gap bytes; the storage is checked once, not per read.

    A mapped file is read with ``os.pread`` rather than through the mapping, so the scan (one
    small read per tensor) does not pull mapped pages into the process's RSS: peak memory stays
    independent of the weights.
    """

    def __init__(self, doc: Document, scan: bool, cancel: threading.Event | None, deep: bool = False,
                 progress=None) -> None:
        self.buf = None
        self.fd: int | None = None
        self.cancel = cancel
        self.progress = progress
        self.scanned = 0
        self.size = 0
        storage = doc.storage
        if not scan or storage is None:
            return
        try:
            storage.check()
            if getattr(storage, "remote", False):  # a URL: scanned only when asked (--check --deep, the layout screen)
                deep = deep or storage.deep
                self.buf = storage.buffer() if deep else None  # slices are memoryviews
                self.size = storage.size if deep else 0
            elif getattr(storage, "mapped", False) and getattr(storage, "path", None):
                self.fd = os.open(storage.path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
                self.size = storage.size
            else:
                self.buf = memoryview(storage.buffer())
                self.size = len(self.buf)
        except (FormatError, OSError, TypeError, ValueError):
            self.buf = self.fd = None
            self.size = 0

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def _read(self, pos: int, n: int) -> bytes:
        if self.fd is not None:
            return os.pread(self.fd, n, pos)
        return self.buf[pos : pos + n].tobytes()  # type: ignore[index]

    def nonzero(self, start: int, end: int, limit: int | None) -> bool | None:
        """Whether any byte in [start, end) is non-zero; None when not scanned (too long, no bytes)."""
        if (self.buf is None and self.fd is None) or end > self.size:
            return None
        if end <= start:
            return False
        if limit is not None and end - start > limit:
            return None
        pos = start
        try:
            while pos < end:
                if self.cancel is not None and self.cancel.is_set():
                    return None
                n = min(CHUNK, end - pos)
                chunk = self._read(pos, n)
                if len(chunk) != n:
                    return None  # the file shrank under us
                self.scanned += n
                if self.progress is not None:
                    self.progress(self.scanned)
                if chunk != (_ZEROS64[:n] if n <= 64 else bytes(n)):
                    return True
                pos += n
        except OSError:
            return None
        return False


_ZEROS64 = bytes(64)


def layout(doc: Document, *, scan: bool = True, cancel: threading.Event | None = None, deep: bool = False,
           progress=None) -> Layout:
    """The byte map of a OneModel document (any state: missing parts become ``gap``).

    A file at a URL has its padding and gaps fetched and scanned only with ``deep`` (or ``--check
    --deep``); ``progress(bytes scanned so far)`` is told after each piece scanned."""
    sc = _Scanner(doc, scan, cancel, deep, progress)
    try:
        return _layout(doc, sc)
    finally:
        sc.close()


def _layout(doc: Document, sc: _Scanner) -> Layout:
    size = doc.size
    ext: list[Span] = []
    empties: list[Span] = []
    pos = 0
    if size > 0:
        ext.append(Span(0, min(HEADER_SIZE, size), "header"))
        pos = ext[-1].end
    if doc.manifest_span is not None and pos < size:
        mo, ml = doc.manifest_span
        if mo == pos and ml > 0:
            ext.append(Span(mo, mo + ml, "manifest"))
            pos = mo + ml
    data = doc.data_span
    index = None
    if data is not None and pos <= data[0] <= size:
        do, dl = data
        if do > pos:
            ext.append(Span(pos, do, "padding", nonzero=sc.nonzero(pos, do, None)))
        index = _data_extents(doc, do, do + dl, ext, empties, sc)
        pos = do + dl
    if pos < size:
        ext.append(Span(pos, size, "gap", nonzero=sc.nonzero(pos, size, GAP_SCAN_LIMIT)))
    empties.sort(key=lambda e: e.start)
    return Layout(
        tuple(ext), size, tuple(empties),
        tuple(e.start for e in ext), tuple(e.start for e in empties),
        index if index is not None else TensorSpans(()),
    )


def _data_spans(doc: Document, do: int, de: int) -> TensorSpans:
    """The tensors stored in the data region ``[do, de)`` of the document's file (zero-length ones too)."""
    storage = doc.storage
    if doc.model is None or storage is None:
        return TensorSpans(())

    index = TensorSpans(all_tensors(doc.model), storage=storage, empties=True)
    if index.starts and do <= index.starts[0] and max(index.ends) <= de and all(do <= t.file_offset <= de for t in index.empties):
        return index

    def inside(t) -> bool:  # out of the region: the reader refuses these; stay safe anyway
        return do <= t.file_offset and t.file_offset + t.length <= de

    return TensorSpans(all_tensors(doc.model), inside, storage=storage, empties=True)


def _data_extents(doc, do: int, de: int, ext: list, empties: list, sc: _Scanner) -> TensorSpans:
    index = _data_spans(doc, do, de)
    for t in index.empties:
        empties.append(Span(t.file_offset, t.file_offset, "tensor", (t.name,), (t.where,), owners=1))
    if not index.starts:
        if de > do:
            ext.append(Span(do, de, "tail", nonzero=sc.nonzero(do, de, GAP_SCAN_LIMIT)))
        return index
    if index.disjoint():  # no two spans tie: start order is the order
        _disjoint_extents(zip(index.starts, index.ends, index.tensors), do, de, ext, sc)
        return index
    spans = sorted((s, e, t.name, t.where) for s, e, t in zip(index.starts, index.ends, index.tensors))
    # (already by start and end: names and wheres order the ties)
    # sweep: boundaries at every start and end; owners of each elementary interval
    events = []
    for k, (s, e, _n, _w) in enumerate(spans):
        events.append((s, 1, k))
        events.append((e, 0, k))
    events.sort()
    segs, last_end = _owner_segments(events, len(spans), do)
    # merge adjacent segments with the same owners, classify unowned ones
    merged: list[list] = []
    for s, e, keys, cnt in segs:
        if merged and merged[-1][2] == keys and merged[-1][3] == cnt and merged[-1][1] == s:
            merged[-1][1] = e
        else:
            merged.append([s, e, keys, cnt])
    name_of = [sp[2] for sp in spans].__getitem__
    where_of = [sp[3] for sp in spans].__getitem__
    prev_owner: tuple | None = None
    last_keys: tuple | None = None
    for s, e, keys, cnt in merged:
        if cnt:
            if keys is not last_keys:  # the same owners' names are not rebuilt per segment
                names, wheres, last_keys = tuple(map(name_of, keys)), tuple(map(where_of, keys)), keys
            ext.append(Span(s, e, "tensor" if cnt == 1 else "overlap", names, wheres, owners=cnt))
            prev_owner = (names[-1:], wheres[-1:])
            continue
        pad_end = min(e, -(-s // ALIGN) * ALIGN) if prev_owner is not None else s
        if pad_end > s:
            ext.append(Span(s, pad_end, "padding", prev_owner[0], prev_owner[1], nonzero=sc.nonzero(s, pad_end, None)))
        if e > pad_end:
            ext.append(Span(pad_end, e, "gap", nonzero=sc.nonzero(pad_end, e, GAP_SCAN_LIMIT)))
    if de > last_end:
        ext.append(Span(last_end, de, "tail", nonzero=sc.nonzero(last_end, de, GAP_SCAN_LIMIT)))
    return index


def _owner_segments(events: list, n: int, do: int) -> tuple[list[tuple[int, int, tuple[int, ...], int]], int]:
    """``(start, end, first owners, owner count)`` of each elementary interval between the sorted events,
    and the last event's offset.

    ``events`` are ``(offset, 0 end / 1 start, span index)``, sorted; span indices start in
    increasing order. The owners are a doubly linked list in index order (a start joins at the tail,
    an end unlinks in O(1)) and ``head`` is its first MAX_NAMES entries, updated in O(MAX_NAMES) per
    event: listing every owner at every boundary was quadratic (10^5 nested tensors).
    """
    tail = n  # the list's sentinel
    nxt = [tail] * (n + 1)
    prv = [tail] * (n + 1)
    in_head = [False] * n
    head: tuple[int, ...] = ()
    count = 0
    segs: list[tuple[int, int, tuple[int, ...], int]] = []
    cur = do
    for x, kind, k in events:
        if x > cur:
            segs.append((cur, x, head, count))
            cur = x
        if kind:
            last = prv[tail]
            nxt[last], prv[k], nxt[k], prv[tail] = k, last, tail, k
            count += 1
            if count <= MAX_NAMES:
                head += (k,)
                in_head[k] = True
        else:
            if in_head[k]:
                follower = nxt[head[-1]]  # the first owner beyond the head moves into it
                i = head.index(k)
                head = head[:i] + head[i + 1:]
                in_head[k] = False
                if follower != tail:
                    head += (follower,)
                    in_head[follower] = True
            p, q = prv[k], nxt[k]
            nxt[p], prv[q] = q, p
            count -= 1
    return segs, cur


def _disjoint_extents(spans, do: int, de: int, ext: list, sc: _Scanner) -> None:
    """The common case, no two tensors share a byte: one linear pass over the sorted ``(start, end, tensor)``."""
    pos = do
    prev = None
    for s, e, t in spans:
        if s > pos:
            pad_end = min(s, -(-pos // ALIGN) * ALIGN) if prev is not None else pos
            if pad_end > pos:
                ext.append(Span(pos, pad_end, "padding", (prev.name,), (prev.where,), nonzero=sc.nonzero(pos, pad_end, None)))
            if s > pad_end:
                ext.append(Span(pad_end, s, "gap", nonzero=sc.nonzero(pad_end, s, GAP_SCAN_LIMIT)))
        ext.append(Span(s, e, "tensor", (t.name,), (t.where,), owners=1))
        pos = e
        prev = t
    if de > pos:
        ext.append(Span(pos, de, "tail", nonzero=sc.nonzero(pos, de, GAP_SCAN_LIMIT)))


# ---------------------------------------------------------------------------------------------
# findings


def file_findings(
    doc: Document, lay: Layout | None = None, *, cancel: threading.Event | None = None, canonical: bool = True,
    parsed=None,
) -> list[Finding]:
    """Findings that need the byte layout or the writer (see the module docstring); for an ONNX file
    with external data, its weights files' findings (:func:`.external.external_findings`).

    ``canonical=False`` skips ``noncanonical-manifest``: without ``parsed`` (the open's
    :class:`~onemodel_viewer.format.onemodel.manifest.Parsed`, from ``reader.open_with_manifest``) it
    re-encodes the whole manifest with the writer, which costs about as much as opening the file.
    ``cancel`` set: the scans stop and the result is incomplete (``[]`` once the layout is done).
    """
    if doc.source == "onnx" and doc.external_files:
        # the weights files' findings (shared-bytes, unowned-bytes...): what --check lists, so --diff and
        # the viewer show them too
        from .external import external_findings, external_layout

        layouts = external_layout(doc, cancel=cancel)
        return [] if cancel is not None and cancel.is_set() else external_findings(layouts)
    if doc.source != "onemodel" or doc.header is None:
        return []
    if lay is None:
        lay = layout(doc, cancel=cancel)
    if cancel is not None and cancel.is_set():
        return []
    out: list[Finding] = []
    counts: dict[str, int] = {}

    def add(code: str, where: str, offset: int | None, message: str) -> None:
        n = counts.get(code, 0)
        counts[code] = n + 1
        if n < MAX_FINDINGS_PER_CODE:
            out.append(Finding(code, where, offset, message))

    for e in lay.extents:
        if e.kind == "padding" and e.nonzero:
            where = e.wheres[0] if e.wheres else "padding"
            what = f"after tensor {e.names[0]!r}" if e.names else "between the manifest and the data region"
            add("nonzero-padding", where, e.start, f"{e.length} padding bytes {what} are not all zero")
        elif e.kind in ("gap", "tail") and doc.data_span is not None:
            what = "after the last tensor" if e.kind == "tail" else "that no tensor owns (beyond alignment padding)"
            nz = {True: ", some non-zero", False: ", all zero", None: ""}[e.nonzero]
            add("unowned-bytes", "data", e.start, f"{e.length} bytes {what}{nz}")
        elif e.kind == "overlap":
            names = ", ".join(repr(n) for n in e.names[:4]) + (" ..." if e.owners > 4 else "")
            add("shared-bytes", e.wheres[-1], e.start, f"{e.length} bytes are shared by {e.owners} tensors: {names}")
    if doc.data_span is not None:
        do = doc.data_span[0]
        ext = lay.extents
        i = 0
        # the empties and the extents are both sorted by offset: one merge walk finds the extent
        # holding each empty tensor (owner_at per empty tensor listed all the others there: quadratic)
        for z in lay.empties:
            if z.start == do:  # the writer's canonical place for an empty tensor (offset 0)
                continue
            while i < len(ext) and ext[i].end <= z.start:
                i += 1
            if i == len(ext):
                break
            o = ext[i]
            if o.kind in ("tensor", "overlap") and o.start <= z.start:
                add("shared-bytes", z.wheres[0], z.start, f"empty tensor {z.names[0]!r} sits inside tensor {o.names[0]!r}")
    for code, n in counts.items():
        if n > MAX_FINDINGS_PER_CODE:
            out.append(Finding(code, "data", None, f"... and {n - MAX_FINDINGS_PER_CODE} more {code} findings"))
    nc = noncanonical(doc, parsed, step=cancel.is_set if cancel is not None else None) if canonical else None
    if nc is not None:
        out.append(nc)
    return out


def noncanonical(doc: Document, parsed=None, step=None) -> Finding | None:
    """``noncanonical-manifest`` when the section 4 writer would emit other manifest bytes.

    With ``parsed`` (the parsed manifest of this very open, duplicate keys detected), a cheap
    proof (:func:`~onemodel_viewer.format.onemodel.canonical.canonical_text` and
    :func:`~onemodel_viewer.format.onemodel.canonical.canonical_structure`: ~3 ms for an LLM-sized
    manifest) settles the common canonical case; anything it cannot prove goes through the exact
    comparison (:func:`~onemodel_viewer.format.onemodel.canonical.writer_difference`), which gives the
    finding's offset without encoding the whole model: a manifest with the writer's structure is
    compared with orjson's encoding of its parse, any other is encoded a record at a time up to
    its first differing byte (another writer's key order: the first object). ``step``: asked between
    records of that comparison (True stops it: None).
    """
    if doc.model is None or doc.problems or doc.manifest_span is None or doc.storage is None:
        return None
    from ...format.onemodel.canonical import canonical_structure, canonical_text, writer_difference

    # the structure first: another writer's key order fails it at the first object
    structured = parsed is not None and canonical_structure(parsed.value)
    if structured and parsed.compact:  # the bytes are orjson's encoding of the parse: what writer_difference compares
        return None
    mo, ml = doc.manifest_span
    try:
        have = doc.storage.read(mo, ml)
    except (FormatError, ValueError):
        return None
    if structured and parsed.checked_duplicates and not parsed.duplicates and canonical_text(have):
        return None
    try:
        i = writer_difference(have, doc.model, parsed.value if parsed is not None else None, structured=structured,
                              step=step)
    except (FormatError, RecursionError, ValueError, TypeError):
        return None
    if i is None:
        return None
    return Finding(
        "noncanonical-manifest", "manifest", mo + i,
        f"the manifest ({len(have)} bytes) differs from what the writer emits from byte {i}",
    )


def all_findings(
    doc: Document, lay: Layout | None = None, *, cancel: threading.Event | None = None, canonical: bool = True,
    parsed=None,
) -> list[Finding]:
    """The reader's findings plus :func:`file_findings` (and ``duplicate-key`` after a strict open)."""
    out = list(doc.findings)
    if doc.source == "onemodel" and doc.mode == "strict" and doc.manifest_span is not None and doc.storage is not None:
        from ...format.onemodel.manifest import with_duplicates
        from ...format.reader import duplicate_key_findings

        mo, ml = doc.manifest_span
        try:
            data = doc.storage.read(mo, ml)
            if parsed is not None:  # the strict open's parse, its keys checked now: no second parse
                parsed = with_duplicates(data, parsed)
            out.extend(duplicate_key_findings(data, mo, parsed))
        except FormatError:
            pass
    return out + file_findings(doc, lay, cancel=cancel, canonical=canonical, parsed=parsed)
