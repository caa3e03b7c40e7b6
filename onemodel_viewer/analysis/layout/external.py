"""The weights files of an ONNX model: who owns each byte of each, and the findings that follow.

:func:`external_layout` gives one :class:`FileLayout` per external data file an ONNX document
reads (from the importer's :class:`~onemodel_viewer.format.onnx.external.ExternalFacts`: the
same resolution, the same ranges), with its extents (:class:`~.spans.Span`\\ s) in offset order:

=============  ================================================================================
kind           bytes
=============  ================================================================================
``tensor``     a tensor's range (one row per tensor, overlapping ones included)
``overlap``    bytes of two tensors at once (the later tensor and the one reaching furthest)
``padding``    between two tensors, shorter than the file's alignment, ending on a multiple of it
``gap``        between two tensors, owned by no tensor and not padding
``tail``       after the last tensor's last byte
=============  ================================================================================

Sharing is computed per file: a tensor of ``w.data`` never shares bytes with one of the ``.onnx``
or of another weights file. ``alignment`` is the largest power of two dividing the offset of
every non-empty tensor of the file (None when none has a non-zero offset).

:func:`external_findings`: ``shared-bytes``, ``unowned-bytes`` (gaps and tails, with their
extents), ``nonzero-padding``, ``unaligned-external-data`` (an offset not a multiple of
:data:`ALIGN`, with the alignment it has) and ``split-external-data`` (``LOCATION``,
``LOCATION.1``... form one split set); each carries the weights file's location in ``file``.

Bytes are read (``os.pread``, never a mapping) only to tell whether padding and gaps are zero, up
to :data:`SCAN_LIMIT` bytes each. No numpy, no onnx.
"""

from __future__ import annotations

import os
import re
import threading
from dataclasses import dataclass

from ...format.errors import Finding
from ...format.onnx.external import ExternalFacts, open_regular
from .spans import Span

__all__ = ["FileLayout", "external_layout", "external_findings", "ALIGN"]

ALIGN = 64
"""An external tensor offset not a multiple of this is an ``unaligned-external-data`` finding."""
SCAN_LIMIT = 16 << 20
MAX_FINDINGS_PER_CODE = 100
_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class FileLayout:
    """One weights file."""

    path: str
    """The location as written in the model (relative to the model's folder)."""
    real: str
    """The file it resolves to."""
    size: int
    tensors: int
    """Tensors stored in it (zero-length ones included)."""
    owned: int
    """Bytes inside at least one tensor's range."""
    unowned: int
    alignment: int | None
    spans: tuple[Span, ...] = ()
    empties: tuple[tuple[str, str, int], ...] = ()
    """``(name, where, offset)`` of each zero-length tensor."""

    def as_json(self) -> dict:
        return {"path": self.path, "size": self.size, "tensors": self.tensors, "owned": self.owned,
                "unowned": self.unowned, "alignment": self.alignment}


def _lowbit(n: int) -> int:
    return n & -n


class _Zeros:
    """Whether ranges of one file are all zero (pread in chunks)."""

    def __init__(self, path: str, scan: bool, cancel: threading.Event | None) -> None:
        self.fd = None
        self.cancel = cancel
        if scan:
            self.fd = open_regular(path)

    def nonzero(self, start: int, end: int) -> bool | None:
        if self.fd is None or end - start > SCAN_LIMIT:
            return None
        pos = start
        try:
            while pos < end:
                if self.cancel is not None and self.cancel.is_set():
                    return None
                n = min(_CHUNK, end - pos)
                chunk = os.pread(self.fd, n, pos)
                if len(chunk) != n:
                    return None
                if chunk.count(0) != n:
                    return True
                pos += n
        except OSError:
            return None
        return False

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def external_layout(doc, *, scan: bool = True, cancel: threading.Event | None = None) -> list[FileLayout]:
    """One :class:`FileLayout` per weights file of an ONNX document, in first-use order ([] otherwise)."""
    facts = getattr(doc, "extra", None)
    if not isinstance(facts, ExternalFacts) or not facts.files:
        return []
    by_file: dict[str, list] = {real: [] for _loc, real, _size in facts.files}
    for r in facts.refs:
        if r.real in by_file:
            by_file[r.real].append(r)
    out = []
    for loc, real, size in facts.files:
        zeros = _Zeros(real, scan, cancel)
        try:
            out.append(_file_layout(loc, real, size, by_file[real], zeros))
        finally:
            zeros.close()
    return out


def _file_layout(loc: str, real: str, size: int, refs: list, zeros: _Zeros) -> FileLayout:
    full = sorted((r for r in refs if r.length), key=lambda r: (r.offset, r.offset + r.length))
    empties = tuple((r.name, r.where, r.offset) for r in refs if not r.length)
    align = 0
    for r in full:
        if r.offset:
            align = _lowbit(r.offset) if not align else min(align, _lowbit(r.offset))
    alignment = align or None
    spans: list[Span] = []
    owned = 0
    reach, reach_ref = 0, None  # the furthest end so far and the tensor it belongs to
    for r in full:
        s, e = r.offset, r.offset + r.length
        if s > reach:
            _unowned(spans, reach, s, alignment, reach_ref, zeros)
        elif reach_ref is not None and s < reach:
            spans.append(Span(s, min(e, reach), "overlap", (reach_ref.name, r.name), (reach_ref.where, r.where), owners=2))
        spans.append(Span(s, e, "tensor", (r.name,), (r.where,), owners=1))
        owned += max(0, e - max(s, reach))
        if e > reach:
            reach, reach_ref = e, r
    if size > reach:
        spans.append(Span(reach, size, "tail", nonzero=zeros.nonzero(reach, size)))
    spans.sort(key=lambda x: (x.start, x.kind != "tensor", x.end))
    return FileLayout(loc, real, size, len(refs), owned, size - owned, alignment, tuple(spans), empties)


def _unowned(spans: list, s: int, e: int, alignment: int | None, prev, zeros: _Zeros) -> None:
    """The bytes ``[s, e)`` before a tensor at ``e``: alignment padding when short enough, else a gap."""
    if prev is not None and alignment and alignment > 1 and e % alignment == 0 and e - s < alignment:
        spans.append(Span(s, e, "padding", (prev.name,), (prev.where,), nonzero=zeros.nonzero(s, e)))
    else:
        spans.append(Span(s, e, "gap", nonzero=zeros.nonzero(s, e)))


_SPLIT = re.compile(r"^(.*)\.([1-9][0-9]*)$")


def split_sets(locations: list[str]) -> list[list[str]]:
    """Groups of locations ``L``, ``L.1``, ``L.2``... (at least two files, ``L.k`` by number)."""
    present = set(locations)
    groups: dict[str, list[tuple[int, str]]] = {}
    for loc in locations:
        m = _SPLIT.match(loc)
        if m and m.group(1) in present:
            groups.setdefault(m.group(1), []).append((int(m.group(2)), loc))
    return [[base] + [loc for _k, loc in sorted(parts)] for base, parts in groups.items()]


def external_findings(layouts: list[FileLayout]) -> list[Finding]:
    """The findings of the module docstring, at most :data:`MAX_FINDINGS_PER_CODE` per code (then a count)."""
    out: list[Finding] = []
    counts: dict[str, int] = {}

    def add(code: str, where: str, offset: int | None, message: str, file: str) -> None:
        n = counts.get(code, 0)
        counts[code] = n + 1
        if n < MAX_FINDINGS_PER_CODE:
            out.append(Finding(code, where, offset, message, file))

    for fl in layouts:
        name = fl.path
        for sp in fl.spans:
            nz = {True: ", some non-zero", False: ", all zero", None: ""}[sp.nonzero]
            extent = f"bytes {sp.start:#x}..{sp.end:#x} ({sp.length:,} bytes) of {name!r}"
            if sp.kind == "overlap":
                add("shared-bytes", sp.wheres[-1], sp.start,
                    f"{extent} are shared by tensors {sp.names[0]!r} and {sp.names[1]!r}", name)
            elif sp.kind == "gap":
                add("unowned-bytes", "external_data", sp.start, f"{extent} no tensor owns{nz}", name)
            elif sp.kind == "tail":
                add("unowned-bytes", "external_data", sp.start, f"{extent} after the last tensor{nz}", name)
            elif sp.kind == "padding" and sp.nonzero:
                add("nonzero-padding", sp.wheres[0], sp.start, f"{extent}, alignment padding after tensor "
                    f"{sp.names[0]!r}, are not all zero", name)
            elif sp.kind == "tensor" and sp.start % ALIGN:
                add("unaligned-external-data", sp.wheres[0] + ".external_data.offset", sp.start,
                    f"tensor {sp.names[0]!r} at offset {sp.start:,} of {name!r} is aligned to {_lowbit(sp.start)} "
                    f"bytes only (not {ALIGN})", name)
    for group in split_sets([fl.path for fl in layouts]):
        add("split-external-data", "external_data", None, f"{', '.join(map(repr, group))} form one split set "
            f"({len(group)} files)", group[0])
    for code, n in counts.items():
        if n > MAX_FINDINGS_PER_CODE:
            out.append(Finding(code, "external_data", None, f"... and {n - MAX_FINDINGS_PER_CODE} more {code} findings"))
    return out
