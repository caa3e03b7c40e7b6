"""The byte ranges of the tensors stored in one file: which tensors hold a byte, which share bytes.

No UI here. One :class:`TensorSpans` per file: :func:`~.layout.layout` sweeps its spans into
extents (and answers :meth:`~.layout.Layout.sharing` with it); the viewer's byte map
(``tui/hex/bytemap.py``) colours the hex pane and names a byte's owner from it, and its "shares bytes
with" lines are :meth:`TensorSpans.sharing`. Built in O(n log n); each query costs O((k + 1) log n)
for the k tensors it looks at, whatever the other tensors share (a tensor over the whole data
region used to make every query scan every tensor under it: issue 11).
"""

from __future__ import annotations

import bisect
import os
from itertools import compress
from typing import Callable, Iterable

from ...format.document import Document
from ...format.dtypes import STRING
from ...format.schema import Tensor

__all__ = ["TensorSpans", "in_file"]


def in_file(t: Tensor, doc: Document) -> bool:
    """True when ``t``'s bytes are in the document's own file (not memory, not an external data file)."""
    if t.storage is None:
        return False
    if doc.storage is not None:
        return t.storage is doc.storage
    path = getattr(t.storage, "path", None)
    return path is not None and os.path.abspath(path) == os.path.abspath(doc.path)


class TensorSpans:
    """The distinct tensors with bytes (not strings, not empty) for which ``keep(t)`` holds, as
    ``[start, end)`` file ranges sorted by (start, end), ties in the order given.

    A tree of maximum ends over them (level 0 the ends in start order, each level above the maximum
    of two below) lets a query skip every run of tensors ending before the bytes it asks about.
    """

    __slots__ = ("starts", "ends", "tensors", "order", "empties", "_maxend", "_ends_sorted")

    def __init__(self, tensors: Iterable[Tensor], keep: Callable[[Tensor], bool] | None = None, *,
                 storage: object = None, empties: bool = False) -> None:
        """``storage``: only tensors viewing that storage (the cheap test a OneModel file needs);
        ``empties``: keep the zero-length tensors too, in :attr:`empties`."""
        # list comprehensions, not one loop with a branch per test: this runs on every open
        if storage is None:
            ts = [t for t in tensors if t.file_offset is not None and t.dtype != STRING]
        else:
            ts = [t for t in tensors if t.file_offset is not None and t.dtype != STRING and t.storage is storage]
        if len(set(map(id, ts))) != len(ts):  # a tensor listed twice: the first time counts
            seen: set[int] = set()
            ts = [t for t in ts if not (id(t) in seen or seen.add(id(t)))]
        zero = [t for t in ts if t.length == 0] if empties else []
        ts = [t for t in ts if t.length > 0]
        if keep is not None:
            ts = [t for t in ts if keep(t)]
            zero = [t for t in zero if keep(t)]
        picked = [(t.file_offset, t.file_offset + t.length, k) for k, t in enumerate(ts)]  # ints only: untracked by the GC
        picked.sort()  # (start, end, then the order given): no two entries tie
        self.starts: list[int] = [p[0] for p in picked]
        self.ends: list[int] = [p[1] for p in picked]
        """Ends in start order (level 0 of the max-end tree)."""
        self.order: list[int] = [p[2] for p in picked]
        """Each span's running number in the order given (the hex pane alternates colours by it)."""
        self.tensors: list[Tensor] = list(map(ts.__getitem__, self.order))
        self.empties: list[Tensor] = zero
        """Zero-length tensors kept, in the order given (only with ``empties=True``)."""
        self._maxend: list[list[int]] | None = None
        self._ends_sorted: list[int] | None = None

    def _tree(self) -> list[list[int]]:
        """The max-end tree, built on the first query (``--check`` sweeps the spans and asks none)."""
        levels = self._maxend
        if levels is None:
            levels = [self.ends] if self.ends else []
            while levels and len(levels[-1]) > 1:
                lv = levels[-1]
                up = list(map(max, lv[0::2], lv[1::2]))  # at C speed, one ``map`` per level
                if len(lv) % 2:
                    up.append(lv[-1])
                levels.append(up)
            self._ends_sorted = sorted(self.ends)
            self._maxend = levels
        return levels

    def disjoint(self) -> bool:
        """No two spans share a byte (each ends by the next one's start: in start order that is enough)."""
        return all(map(int.__le__, self.ends[:-1], self.starts[1:]))

    def __len__(self) -> int:
        return len(self.starts)

    def _reaching(self, after: int, hi: int, limit: int | None, descending: bool) -> list[int]:
        """Indices ``i < hi`` of the spans ending past ``after``, at most ``limit``.

        A walk down the max-end tree that skips every subtree ending at or before ``after``:
        O((k + 1) log n) for k answers.
        """
        levels = self._tree()
        out: list[int] = []
        if not levels or hi <= 0:
            return out
        stack = [(len(levels) - 1, 0)]
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

    def holding(self, offset: int, limit: int | None = 8) -> list[int]:
        """Indices of the spans containing ``offset`` (several when tensors share bytes), the last to start first."""
        hi = bisect.bisect_right(self.starts, offset)
        return self._reaching(offset, hi, limit, True)

    def sharing(self, t: Tensor) -> list[Tensor]:
        """The other tensors whose byte range overlaps ``t``'s, in start order."""
        if t.file_offset is None or t.length <= 0:
            return []
        a0, a1 = t.file_offset, t.file_offset + t.length
        hi = bisect.bisect_left(self.starts, a1)
        if hi == 0:
            return []
        # of the spans starting before a1, those ending by a0 (they all start before it) do not overlap
        self._tree()
        k = hi - bisect.bisect_right(self._ends_sorted, a0)  # type: ignore[arg-type]
        if k * 8 >= hi:  # most of them overlap: one filter over their ends, at C speed
            found: Iterable[int] = compress(range(hi), map(a0.__lt__, self.ends[:hi]))
        else:
            found = self._reaching(a0, hi, None, False)
        tensors = self.tensors
        return [x for x in (tensors[i] for i in found) if x is not t]
