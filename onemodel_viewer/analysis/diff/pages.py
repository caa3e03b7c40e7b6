"""The files under a tensor comparison (:mod:`.diff_tensors`): their mapped pages released once compared, and
the check that they did not change on disk meanwhile.

Compared ranges are released in batches, per thread and per mapping: the ranges of neighbouring
tensors join, so ~2,000 small tensors cost a few hundred ``madvise`` calls, not two each.
"""

from __future__ import annotations

import mmap
import threading
from typing import Sequence

from ...format.schema import Tensor

__all__ = ["check_files", "flush", "release"]

_BATCH = 6 << 20
"""A thread releases its compared pages of a mapping once this many bytes have joined."""

_PAGE = mmap.PAGESIZE

_JOIN = 64 << 10
"""Compared byte ranges at most this far apart in one mapping are released together."""


class _Compared(threading.local):
    """This thread's compared byte ranges whose mapped pages are not released yet, one per mapping: the
    ranges of neighbouring tensors join, so ~2,000 small tensors cost a few hundred ``madvise`` calls,
    not two each."""

    def __init__(self) -> None:
        self.ranges: dict[int, list] = {}  # id(mapping) -> [mapping, lo, hi]


_compared = _Compared()


def release(t: Tensor, start: int, end: int) -> None:
    """Drop the mapped pages of bytes ``[start, end)`` of ``t`` from this process once compared (at the
    latest by :func:`flush`, once :data:`_BATCH` bytes have joined): the page cache keeps them, the RSS
    stays bounded (two 4 GiB files would leave 8 GiB of mapped pages in it)."""
    if t.storage is None or t.file_offset is None:
        return
    buf = t.storage.buffer()
    if not isinstance(buf, mmap.mmap) or not hasattr(buf, "madvise"):
        return
    lo, hi = t.file_offset + start, t.file_offset + end
    ranges = _compared.ranges
    r = ranges.get(id(buf))
    if r is not None and r[0] is buf and r[1] <= lo <= r[2] + _JOIN:
        r[2] = max(r[2], hi)
    else:
        if r is not None:
            _drop(*r)
        r = ranges[id(buf)] = [buf, lo, hi]
    if r[2] - r[1] >= _BATCH:
        del ranges[id(buf)]
        _drop(*r)


def flush() -> None:
    """Release every range this thread compared (:func:`release`)."""
    ranges = list(_compared.ranges.values())
    _compared.ranges.clear()
    for r in ranges:
        _drop(*r)


def _drop(buf: mmap.mmap, start: int, end: int) -> None:
    lo = start // _PAGE * _PAGE
    try:
        hi = min(end, len(buf))
        if hi > lo:
            buf.madvise(mmap.MADV_DONTNEED, lo, hi - lo)
    except (OSError, ValueError, AttributeError):  # closed, or not supported here: only the RSS figure suffers
        pass


def check_files(pairs: Sequence[tuple[Tensor, Tensor]]) -> None:
    """Raise (``Io``) if a file holding these tensors changed on disk (its mapping may read zeros since)."""
    seen: set[int] = set()
    for pair in pairs:
        for t in pair:
            if t.storage is not None and id(t.storage) not in seen:
                seen.add(id(t.storage))
                t.storage.check()
