"""The byte layout of an ``.ort`` file: where each tensor payload lies, and the bytes no flatbuffer object owns.

Works on an opened ``.ort`` :class:`~..format.document.Document` (its ``extra`` is the reader's
:class:`~..format.ort.facts.OrtFacts`): :func:`ort_layout` returns

* one ``payload`` :class:`~.spans.Span` per ``raw_data`` payload the reader walked (initializers,
  attribute tensors, sparse values and indices), in offset order, and its tensor's data type:
  :func:`alignment` (the largest power of two dividing the offset) and :func:`~..format.ort.facts.in_place` (aligned
  to the element size: what a reader needs to use the bytes in place on strict-alignment
  hardware) describe its offset;
* one ``unowned`` span per run of bytes that no root, vtable, table, vector, string or payload
  covers. Runs shorter than :data:`~..format.ort.reader.PADDING` bytes are the builder's alignment
  padding, and so are the zero runs before a payload that ``--export X.ort --align N`` aligned
  (:func:`~..format.ort.reader.aligning`): only counted (``padding_runs``, ``padding_bytes``) unless
  a byte in them is not zero.

Reads only the unowned bytes (to tell zero padding from anything else), never a payload byte;
``cancel`` (a ``threading.Event``) stops it between runs.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from ...format.ort.reader import PADDING, aligning
from ...format.schema import all_tensors
from .spans import Span

SCAN_LIMIT = 1 << 20
"""Bytes of one unowned run read to look for a non-zero byte (beyond: not scanned)."""


def alignment(offset: int) -> int:
    """The largest power of two dividing ``offset`` (capped at 2^30; offset 0 counts as 2^30)."""
    return min(offset & -offset, 1 << 30) if offset else 1 << 30


@dataclass(slots=True)
class OrtLayout:
    payloads: list[Span] = field(default_factory=list)
    """``payload`` spans in offset order: ``names`` the tensor's name ('' when not imported), ``wheres`` its
    schema path (``InferenceSession.model.graph.initializers[3]``)."""
    dtypes: dict[str, int] = field(default_factory=dict)
    """Schema path -> data type code of each imported payload's tensor."""
    unowned: list[Span] = field(default_factory=list)
    """``unowned`` spans: runs of :data:`PADDING` bytes or more, and shorter ones holding a non-zero byte."""
    first_nonzero: dict[int, int] = field(default_factory=dict)
    """Start of an unowned span -> offset of its first non-zero byte (spans with ``nonzero`` True)."""
    padding_runs: int = 0
    """Shorter all-zero runs (alignment padding), counted, not listed."""
    padding_bytes: int = 0


def _first_nonzero(buf, start: int, length: int) -> int | None:
    chunk = bytes(buf[start:start + length])
    stripped = chunk.lstrip(b"\0")
    return None if not stripped else start + len(chunk) - len(stripped)


def ort_layout(doc, cancel: threading.Event | None = None) -> OrtLayout:
    """The payloads and unowned bytes of an ``.ort`` document (see the module docstring)."""
    out = OrtLayout()
    facts = doc.extra
    if doc.source != "ort" or facts is None or not hasattr(facts, "unowned"):
        return out
    tensors = {t.where: t for t in all_tensors(doc.model)} if doc.model is not None else {}
    for start, length, kind, owner in facts.spans:
        if kind == "payload":
            where = owner[: -len(".raw_data")] if owner.endswith(".raw_data") else owner
            t = tensors.get(where)
            out.payloads.append(Span(start, start + length, "payload", (t.name if t is not None else "",), (where,), owners=1))
            if t is not None:
                out.dtypes[where] = t.dtype
    buf = doc.storage.buffer() if doc.storage is not None else None
    payload_starts = {p.start for p in out.payloads}
    for start, length in facts.unowned:
        if cancel is not None and cancel.is_set():
            break
        scanned = buf is not None and length <= SCAN_LIMIT
        nz = _first_nonzero(buf, start, length) if scanned else None
        if scanned and nz is None and (length < PADDING or aligning(buf, start, length, payload_starts)):
            out.padding_runs += 1
            out.padding_bytes += length
            continue
        out.unowned.append(Span(start, start + length, "unowned", nonzero=None if not scanned else nz is not None))
        if nz is not None:
            out.first_nonzero[start] = nz
    return out
