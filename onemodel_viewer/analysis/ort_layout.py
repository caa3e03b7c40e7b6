"""The byte layout of an ``.ort`` file: where each tensor payload lies, and the bytes no flatbuffer object owns.

Works on an opened ``.ort`` :class:`~..format.document.Document` (its ``extra`` is the reader's
:class:`~..format.ort.facts.OrtFacts`): :func:`ort_layout` returns

* one :class:`PayloadRow` per ``raw_data`` payload the reader walked (initializers, attribute tensors,
  sparse values and indices), in offset order, with the offset's alignment: mod 64, mod 4096, the
  largest power of two dividing it, and whether it is aligned to the tensor's element size (what a
  reader needs to use the bytes in place on strict-alignment hardware);
* one :class:`UnownedRow` per run of bytes that no root, vtable, table, vector, string or payload
  covers. Runs shorter than :data:`~..format.ort.reader.PADDING` bytes are the builder's alignment
  padding: only counted (``padding_runs``, ``padding_bytes``) unless a byte in them is not zero.

Reads only the unowned bytes (to tell zero padding from anything else), never a payload byte;
``cancel`` (a ``threading.Event``) stops it between runs.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from ..format.dtypes import DTYPES
from ..format.ort.reader import PADDING
from ..format.schema import all_tensors

SCAN_LIMIT = 1 << 20
"""Bytes of one unowned run read to look for a non-zero byte (beyond: not scanned)."""


@dataclass(frozen=True, slots=True)
class PayloadRow:
    """One tensor's ``raw_data`` payload."""

    start: int
    length: int
    where: str
    """Schema path of the tensor (``InferenceSession.model.graph.initializers[3]``)."""
    name: str
    dtype: int | None
    """The tensor's data type code (None: the tensor was not imported)."""

    @property
    def mod64(self) -> int:
        return self.start % 64

    @property
    def mod4096(self) -> int:
        return self.start % 4096

    @property
    def alignment(self) -> int:
        """The largest power of two dividing the offset (capped at 2^30; offset 0 counts as 2^30)."""
        return min(self.start & -self.start, 1 << 30) if self.start else 1 << 30

    @property
    def element_size(self) -> int:
        info = DTYPES.get(self.dtype) if self.dtype is not None else None
        return min(8, max(1, (info.bits if info else 8) // 8))

    @property
    def in_place(self) -> bool:
        """Aligned to its element size (at most 8): usable in place by a strict-alignment reader."""
        return self.start % self.element_size == 0


@dataclass(frozen=True, slots=True)
class UnownedRow:
    """A run of bytes no flatbuffer object owns."""

    start: int
    length: int
    nonzero: int | None
    """Offset of the first non-zero byte (None: all zero, or not scanned when ``scanned`` is False)."""
    scanned: bool = True


@dataclass(slots=True)
class OrtLayout:
    payloads: list[PayloadRow] = field(default_factory=list)
    unowned: list[UnownedRow] = field(default_factory=list)
    """Runs of :data:`PADDING` bytes or more, and shorter ones holding a non-zero byte."""
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
            out.payloads.append(PayloadRow(start, length, where, t.name if t is not None else "",
                                           t.dtype if t is not None else None))
    buf = doc.storage.buffer() if doc.storage is not None else None
    for start, length in facts.unowned:
        if cancel is not None and cancel.is_set():
            break
        scanned = buf is not None and length <= SCAN_LIMIT
        nz = _first_nonzero(buf, start, length) if scanned else None
        if length < PADDING and scanned and nz is None:
            out.padding_runs += 1
            out.padding_bytes += length
            continue
        out.unowned.append(UnownedRow(start, length, nz, scanned))
    return out
