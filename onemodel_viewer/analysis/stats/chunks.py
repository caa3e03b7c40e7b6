"""The chunk driver of :mod:`~onemodel_viewer.analysis.stats.compute`: element-aligned chunks and cache-sized
blocks, a function mapped over chunks (on a small process-wide thread pool) in order, with cancel,
progress and the file re-checked between chunks, and per-thread scratch arrays."""

from __future__ import annotations

import threading
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterator

from ...format.dtypes import DType
from .result import Cancelled

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from ...format.schema import Tensor

BLOCK_BYTES = 1 << 20
"""Work unit inside a chunk: several numpy passes over one block hit the cache, not RAM."""
MIN_PARALLEL_CHUNKS = 2
UNITS = 8
"""A tensor of fewer than this many chunks is cut into about this many work units (so threads share it)."""
PATTERN_UNIT_BYTES = 2 << 20
"""Smallest work unit of pattern counts: each unit returns a 65,536-entry table (512 KiB) to zero and add, and
on the loaded 2-core machine a second thread did not pay for itself below this (1–4 MiB float16 tensors)."""


@dataclass(frozen=True, slots=True)
class Chunk:
    b0: int
    """First byte (relative to the tensor)."""
    b1: int
    """End byte."""
    n: int
    """Elements in the chunk."""
    index: int


def split_chunks(info: DType, count: int, length: int, chunk_bytes: int) -> list[Chunk]:
    """Chunks that start on whole elements (6-bit: whole groups of 4 in 3 bytes)."""
    if info.bits >= 8:
        unit_bytes, unit_elems = info.bits // 8, 1
    elif info.bits == 6:
        unit_bytes, unit_elems = 3, 4
    else:
        unit_bytes, unit_elems = 1, 8 // info.bits
    per = max(1, chunk_bytes // unit_bytes)
    out: list[Chunk] = []
    e0 = 0
    while e0 < count:
        n = min(per * unit_elems, count - e0)
        b0 = (e0 // unit_elems) * unit_bytes
        b1 = min(length, b0 + info.byte_length(n) if info.bits >= 8 else b0 + -(-n * info.bits // 8))
        out.append(Chunk(b0, b1, n, len(out)))
        e0 += n
    return out


def unit_bytes(size: int, chunk_bytes: int, bits: int) -> int:
    """Bytes per work unit (chunk) of a tensor of ``size`` bytes whose elements have ``bits`` bits.

    A function of the tensor and ``chunk_bytes`` only, never of the thread count: ``chunk_bytes``, or
    about ``size / UNITS`` for a tensor of fewer than :data:`UNITS` chunks (at least
    :data:`PATTERN_UNIT_BYTES` for types of 16 bits or less, else one block). Units of the two-pass
    types (more than 16 bits) are whole blocks once they reach one block: the blocks then lie on the
    same :data:`BLOCK_BYTES` grid of the tensor for any ``chunk_bytes`` of at least a block, and the
    figures, merged a block at a time in block order, keep the same bits.
    """
    if size >= UNITS * chunk_bytes:
        unit = chunk_bytes
    else:
        least = PATTERN_UNIT_BYTES if bits <= 16 else BLOCK_BYTES
        unit = min(chunk_bytes, max(least, -(-size // UNITS)))
    if bits > 16 and unit >= BLOCK_BYTES:
        unit -= unit % BLOCK_BYTES
    return unit


def blocks(info: DType, c: Chunk) -> list[Chunk]:
    """``c`` cut into cache-sized blocks (numpy's passes over one block stay in L2/L3)."""
    if c.b1 - c.b0 <= BLOCK_BYTES:
        return [c]
    return [Chunk(c.b0 + b.b0, c.b0 + b.b1, b.n, c.index) for b in split_chunks(info, c.n, c.b1 - c.b0, BLOCK_BYTES)]


class Driver:
    """Runs a function over chunks (maybe on a thread pool), in order, with cancel/progress/check."""

    def __init__(self, tensor: "Tensor", cancel, progress, total: int, threads: int) -> None:
        self.tensor = tensor
        self.cancel = cancel
        self.progress = progress
        self.total = total
        self.done = 0
        self.threads = threads

    def between(self) -> None:
        if self.cancel is not None and self.cancel.is_set():
            raise Cancelled()
        if self.tensor.storage is not None:
            self.tensor.storage.check()

    def advance(self, nbytes: int) -> None:
        self.done += nbytes
        if self.progress is not None:
            self.progress(self.done, self.total)

    def map(self, fn: Callable[[Any], Any], chunks: list, advance: bool = True) -> Iterator[Any]:
        """``fn`` of each chunk, in order; progress counts the chunks' bytes unless ``advance`` is False."""
        if self.threads <= 1 or len(chunks) < MIN_PARALLEL_CHUNKS:
            for c in chunks:
                self.between()
                r = fn(c)
                if advance:
                    self.advance(c.b1 - c.b0)
                yield r
            self.between()  # the file may have been withdrawn during the last chunk: zeros must not pass as data
            return
        pool = shared_pool(self.threads)
        window: deque = deque()
        try:
            it = iter(chunks)
            for c in it:
                self.between()
                window.append((c, pool.submit(fn, c)))
                if len(window) >= 2 * self.threads:
                    break
            while window:
                c, fut = window.popleft()
                r = fut.result()
                if advance:
                    self.advance(c.b1 - c.b0)
                yield r
                nxt = next(it, None)
                if nxt is not None:
                    self.between()
                    window.append((nxt, pool.submit(fn, nxt)))
            self.between()  # as above: in-flight chunks may have read a withdrawn mapping
        finally:
            for _, fut in window:
                fut.cancel()
            for _, fut in window:  # let in-flight work finish before the views go away
                if not fut.cancelled():
                    try:
                        fut.result()
                    except BaseException:  # noqa: BLE001 - already reported or cancelled
                        pass


_local = threading.local()
_pools: dict[int, ThreadPoolExecutor] = {}
_pools_lock = threading.Lock()


def shared_pool(threads: int) -> ThreadPoolExecutor:
    """A process-wide pool per thread count (created once: no thread start-up per tensor)."""
    with _pools_lock:
        pool = _pools.get(threads)
        if pool is None:
            pool = _pools[threads] = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="omv-stats")
        return pool


def scratch(dtype: "np.dtype", n: int, slot: int = 0) -> "np.ndarray":
    """A per-thread scratch array of ``n`` elements (reused between chunks; ``slot`` tells apart two of one dtype)."""
    import numpy as np

    cache = getattr(_local, "bufs", None)
    if cache is None:
        cache = _local.bufs = {}
    key = (np.dtype(dtype).str, slot)
    buf = cache.get(key)
    if buf is None or buf.size < n:
        buf = cache[key] = np.empty(max(n, 1), dtype=dtype)
    return buf[:n]


def default_threads() -> int:
    """Worker threads when the caller gives none: up to 2 (the CPUs this process may use)."""
    import os

    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        n = os.cpu_count() or 1
    return max(1, min(2, n))
