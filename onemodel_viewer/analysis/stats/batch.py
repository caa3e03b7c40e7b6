"""Statistics of many tensors at once (:func:`compute_stats_many`): small tensors side by side, not one by one.

:func:`~onemodel_viewer.analysis.stats.compute.compute_stats` spreads one tensor over the worker threads only
when it has several chunks; a tensor of a few MiB or less runs on one thread, and a model's weights are
mostly such tensors (1,044 float16 tensors of 288 KiB to 4.5 MiB in the benchmark models). Here the
tensors below :data:`ALONE_BYTES` are grouped into work units of about :data:`UNIT_BYTES` (whole tensors,
in order) and the units run on the shared pool (:func:`~.stats.compute_stats_group`: the pattern tables of
a unit's 16-bit tensors are reduced together); bigger tensors then
run one after another, each spread over the threads as usual. The figures are those of
``compute_stats`` for each tensor, to the bit (same code, and its chunks do not depend on the thread count:
:func:`~.stats_chunks.unit_bytes`). ``--stats`` (the
statistics of every tensor of a file, :mod:`onemodel_viewer.commands.stats`) runs on it.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import TYPE_CHECKING, Callable, Iterable

from .compute import compute_stats, compute_stats_group
from .chunks import default_threads, shared_pool
from .result import Cancelled, TensorStats

if TYPE_CHECKING:  # pragma: no cover
    from ...format.schema import Tensor

ALONE_BYTES = 16 << 20
"""Tensors of at least this many bytes are computed one at a time, over every thread."""
UNIT_BYTES = 4 << 20
"""Small tensors are handed to a worker thread in groups of about this many bytes (fewer hand-overs, and up to
:data:`~.stats.GROUP` 16-bit tables reduced together: 1.25 -> 1.19 G instructions for the first 200 float16
tensors of the 1G benchmark model, against 1 MiB units; the bincounts alone are 0.89 G)."""


def compute_stats_many(
    tensors: Iterable["Tensor"],
    *,
    cancel: threading.Event | None = None,
    progress: Callable[[int, int], None] | None = None,
    threads: int | None = None,
    chunk_bytes: int = 8 << 20,
) -> list[TensorStats]:
    """``[compute_stats(t) for t in tensors]`` (exact histograms), the small tensors side by side.

    ``cancel`` is checked between tensors and, as in ``compute_stats``, between the chunks of each
    (raises :class:`Cancelled`); ``progress(done_bytes, total_bytes)`` is called after each work unit
    and each large tensor. A tensor that ``compute_stats`` rejects raises its ``FormatError`` (the
    small tensors are computed first, in order, then the large ones).
    """
    items = list(tensors)
    if threads is None:
        threads = default_threads()
    threads = max(1, int(threads))
    total = sum(t.length for t in items)
    done = 0
    out: list[TensorStats | None] = [None] * len(items)

    def advance(nbytes: int) -> None:
        nonlocal done
        done += nbytes
        if progress is not None:
            progress(done, total)

    def check() -> None:
        if cancel is not None and cancel.is_set():
            raise Cancelled()

    def run(unit: list[int]) -> list[TensorStats]:
        return compute_stats_group([items[i] for i in unit], cancel=cancel, chunk_bytes=chunk_bytes)

    small = [i for i, t in enumerate(items) if t.length < ALONE_BYTES or threads == 1]
    units: list[list[int]] = []
    size = 0
    for i in small:
        if not units or size >= UNIT_BYTES:
            units.append([])
            size = 0
        units[-1].append(i)
        size += items[i].length
    window: deque = deque()
    pool = shared_pool(threads) if threads > 1 and len(units) > 1 else None
    try:
        it = iter(units)
        while True:
            check()
            if pool is None:
                unit = next(it, None)
                if unit is None:
                    break
                results = run(unit)
            else:
                while len(window) < 2 * threads and (unit := next(it, None)) is not None:
                    window.append((unit, pool.submit(run, unit)))
                if not window:
                    break
                unit, fut = window.popleft()
                results = fut.result()
            for i, s in zip(unit, results):
                out[i] = s
            advance(sum(items[i].length for i in unit))
    finally:
        for _, fut in window:
            fut.cancel()
        for _, fut in window:  # let in-flight work finish before the caller closes the file
            if not fut.cancelled():
                try:
                    fut.result()
                except BaseException:  # noqa: BLE001 - a later tensor's error: the first one is raised
                    pass
    for i, t in enumerate(items):
        if out[i] is None:
            check()
            out[i] = compute_stats(t, cancel=cancel, threads=threads, chunk_bytes=chunk_bytes)
            advance(t.length)
    return out  # type: ignore[return-value]
