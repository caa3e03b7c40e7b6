"""The next byte at which two files differ, at a given alignment: the diff viewer's ``d`` / ``D``.

No UI here. Two storages are compared as ``a[i]`` against ``b[i + delta]``; a byte with no
counterpart (before the other's start, past its end) counts as differing. The scan reads
fixed-size chunks and checks ``cancel`` between them, so a multi-GB file can be searched from
a thread and stopped.
"""

from __future__ import annotations

import threading

import numpy as np

from ...format.storage import Storage

CHUNK = 1 << 20
"""Bytes compared per step (between two looks at ``cancel``)."""


class ScanCancelled(Exception):
    """The scan was told to stop."""


def _first_difference(a: bytes, b: bytes, last: bool) -> int | None:
    """Index of the first (``last``: the last) differing byte of two equally long chunks."""
    ne = np.flatnonzero(np.frombuffer(a, np.uint8) != np.frombuffer(b, np.uint8))
    if not ne.size:
        return None
    return int(ne[-1] if last else ne[0])


def next_differing(a: Storage, b: Storage, start: int, delta: int, step: int = 1,
                   cancel: threading.Event | None = None) -> int | None:
    """The first offset of ``a`` from ``start`` on (``step`` -1: backwards from ``start``) whose byte
    differs from ``b``'s byte ``delta`` further on; None when there is none.

    Raises :class:`ScanCancelled` when ``cancel`` is set, and the storage's ``FormatError`` when a
    file changed on disk.
    """
    size = a.size
    lo, hi = max(0, -delta), min(size, b.size - delta)  # where a's bytes have a counterpart in b
    if not 0 <= start < size:
        return None
    if step > 0:
        pos = start
        while pos < size:
            if cancel is not None and cancel.is_set():
                raise ScanCancelled()
            if pos < lo or pos >= hi:  # no counterpart: differs
                return pos
            end = min(hi, pos + CHUNK)
            i = _first_difference(a.read(pos, end - pos), b.read(pos + delta, end - pos), False)
            if i is not None:
                return pos + i
            pos = end
        return None
    pos = start + 1  # scan [.., pos) backwards
    while pos > 0:
        if cancel is not None and cancel.is_set():
            raise ScanCancelled()
        if pos - 1 >= hi or pos - 1 < lo:
            return pos - 1
        begin = max(lo, pos - CHUNK)
        i = _first_difference(a.read(begin, pos - begin), b.read(begin + delta, pos - begin), True)
        if i is not None:
            return begin + i
        pos = begin
    return None
