"""Statistics of one tensor: a chunked pass over its zero-copy mapped bytes.

:func:`compute_stats` never decodes a whole tensor at once: it walks ``tensor.raw()``
(a read-only view of the mapping) in chunks of ``chunk_bytes``, so memory stays
bounded whatever the tensor size, checks ``cancel`` and the file (``Storage.check``)
between chunks, and reports progress. Three strategies, chosen by dtype:

* **Bit-pattern counts** for every type of 16 bits or less (float16, bfloat16, the
  float8/float6/float4 formats, float8e8m0, int4/uint4, int2/uint2, (u)int8,
  (u)int16, bool): one pass counts how often each bit pattern occurs (``bincount``;
  8-bit types count byte *pairs* as ``uint16``, which halves the work; 4- and 2-bit
  types count whole bytes and fold the nibbles/fields afterwards). Everything then
  follows exactly from at most 65,536 (count, value) pairs: min, max, mean, std,
  NaN/Inf/zero counts and the histogram, with no rounding from summation order. The
  finite patterns sorted by value are a table built once per dtype: min/max are the
  first/last that occur and the histogram is a difference of cumulative counts at the
  bin edges. The ``bincount`` (~1.3 ns per element) is nearly all of the time.
* **Two passes** for float32/float64, complex and 32/64-bit integers, each chunk cut
  into 1 MiB blocks so the several numpy passes over a block hit the cache. Pass 1 gives
  everything but the histogram: per block min, max (both propagate NaN, so finite ones prove
  the block holds no NaN/Inf; only other blocks count them), zeros, and the sum and the sum
  of squared deviations from the block's own mean, merged across blocks with Chan et al.'s
  formula. The sums are float64 and BLAS-free (:func:`_moments`): the block converted to
  float64 and summed by numpy's own loops, so the figures are float64-grade and the same on
  every machine (the float32 BLAS ``dot`` calls used before accumulated in float32 in an order that depends on
  the OpenBLAS kernel: a mean of the benchmark tensor 7e-7 off). A block whose mean² is at
  most 1/16 of its mean square (weights centred near zero) takes ``Σx² − s²/n``; any other
  block (an offset) subtracts its mean first and sums the deviations. Pass 2
  (needs [min, max]) only bins: ``(x − min) · 32/(max − min)`` in the data's own float
  type, cast to ``uint8``, counted with a ``bincount`` over *pairs* of bin indices. Chunks
  go to a small thread pool (numpy releases the GIL in these loops). ``histogram=False``
  stops after pass 1.
* **Sampled histogram first** for a two-pass tensor of more than :data:`SAMPLE_MIN`
  (16 Mi) elements: right after pass 1, the same binning code (same bins over the exact
  [min, max]) counts a sample: evenly spaced 64 KiB blocks holding about one value in 32,
  at most about 8 Mi values, plus the blocks holding the first min and the first max (pass 1
  remembers which 1 MiB block held them), so the first and last bins are never falsely
  empty (:func:`sample_spans` is the rule; no RNG: the same file gives the same sample).
  The result (``hist_exact=False``, ``hist_count`` = values counted, raw counts, not
  scaled) goes to ``on_summary`` before pass 2 starts, or is returned with
  ``histogram="sampled"``; pass 2 then replaces it with the exact histogram. Why: an
  exact histogram cannot fit 3x a ``numpy.sum``. Pass 2 is nearly all ``bincount``
  (~0.65 ns per element over index pairs; triples, one-hot sums, ``add.at`` and 31
  comparisons were measured and are slower). Costs on the (shared) 2-core benchmark
  machine, 1 GiB of float32 (256 Mi values), against one ``numpy.sum`` of the same bytes:
  pass 1 about 3.7–4x, CPU time of both threads about 6.5–7x (each 1 MiB block read once from
  memory, three times more as float32 from L2: min, max, ``== 0``, then converted to float64
  and read three times: Σx, x·x, Σx²; the float64 part costs ~0.5 ns per value, as much as
  the rest), the sample about 5–10 ms (0.1–0.2x); every figure with the sampled histogram
  arrived at 3.97x and 4.18x in two runs at load ~0.4–0.9, over the 3x target (the float32
  ``dot`` calls: 2.58x in the same run, but kernel-dependent and float32-grade).
* **Strings**: lengths and previews.

Semantics (pinned by ``tests/test_stats.py``):

* ``min``/``max``/``mean``/``std`` and the histogram cover finite values only;
  ``std`` is the population standard deviation (``ddof=0``). For integer and bool
  dtypes ``min``/``max`` are exact Python ``int``; otherwise ``float``.
* Histogram: 32 equal bins over ``[min, max]``; the last bin is closed. When every
  finite value is the same, the range is ``[v - 0.5, v + 0.5]`` and all counts fall
  in bin 16 (as ``numpy.histogram`` does). For float32 data the bin of a value lying
  within one float32 rounding of an edge may differ from ``numpy.histogram``'s.
* Complex (complex64/complex128): ``min``/``max``/``mean``/``std``/histogram are over
  the magnitude ``|z|`` (``numpy.abs``); ``nan`` counts elements with a NaN part and
  no infinite part, ``posinf`` elements with an infinite part (``|z|`` is +inf);
  ``neginf`` is always 0; ``zeros`` counts ``z == 0``.
* bool: every non-zero byte is true (value 1).
* Progress: ``progress(done, total)`` in bytes read; ``total`` is the tensor length
  times the number of passes (1 or 2), so a two-pass tensor reports twice its size (one
  pass with ``histogram=False``, or ``"sampled"`` above the threshold). The sample reports
  no progress (it checks ``cancel`` and the file between its groups of blocks).
* ``hist_exact``/``hist_count``: True/``finite`` for every histogram except the sampled one.
"""

from __future__ import annotations

import functools
import math
import threading
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Literal

from ..format.dtypes import DTYPES, STRING, DType, decode
from ..format.errors import FormatError, Kind

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from ..format.schema import Tensor

BINS = 32
"""Histogram bins."""
FIRST = 16
"""How many leading values (or strings) are kept formatted."""
SMALL = 16384
"""Types of 16 bits or less with at most this many elements are decoded whole instead of counted."""
BLOCK_BYTES = 1 << 20
"""Work unit inside a chunk: several numpy passes over one block hit the cache, not RAM."""
PREVIEW_BYTES = 256
"""A string preview keeps at most this many leading bytes of the element (then ``…``)."""
SAMPLE_MIN = 16 << 20
"""Two-pass tensors of more than this many elements get a sampled histogram before the exact one."""
SAMPLE_BLOCK_BYTES = 64 << 10
"""The sample is made of whole blocks of this many bytes (see :func:`sample_spans`)."""
SAMPLE_FRACTION = 32
"""The evenly spaced blocks of the sample hold about one value in this many..."""
SAMPLE_VALUES = 8 << 20
"""...and at most about this many values (a bounded cost, ~0.15x a ``numpy.sum`` of 1 GiB of float32)."""
SAMPLE_UNIT_VALUES = 256 << 10
"""Sample blocks are handed to the worker threads in groups of about this many values."""

_COMPLEX = (14, 15)
_WIDE_INT = (6, 7, 12, 13)
_FLOAT = (1, 11)


@dataclass(frozen=True, slots=True)
class TensorStats:
    """What :func:`compute_stats` found in one tensor."""

    count: int
    """Elements."""
    dtype: int
    """dtype code."""
    min: float | None
    """Smallest finite value (``int`` for integer/bool dtypes, ``|z|`` for complex); None when none."""
    max: float | None
    """Largest finite value; None when none."""
    mean: float | None
    """Mean of the finite values; None when none."""
    std: float | None
    """Population standard deviation of the finite values; None when none."""
    nan: int
    posinf: int
    neginf: int
    zeros: int
    """Elements equal to zero (``-0.0`` included)."""
    finite: int
    """Elements that are neither NaN nor infinite (all of them for integer dtypes)."""
    histogram: tuple[int, ...]
    """32 bins over ``hist_range``; ``()`` when there is no finite value."""
    hist_range: tuple[float, float] | None
    first: tuple[str, ...]
    """The first up to 16 values, each formatted by :func:`format_value`."""
    min_len: int | None = None
    """String tensors: shortest element, in bytes."""
    max_len: int | None = None
    total_len: int | None = None
    previews: tuple[str, ...] = ()
    """String tensors: the first up to 16 elements decoded as UTF-8 (``backslashreplace``),
    at most 256 bytes each; NOT made terminal-safe (the UI does that)."""
    cancelled: bool = False
    """Never set by :func:`compute_stats` (it raises :class:`Cancelled`); kept for callers
    that want to record an interrupted computation."""
    hist_exact: bool = True
    """False when ``histogram`` counts a sample (see :func:`sample_spans`), not every finite value."""
    hist_count: int | None = None
    """How many values ``histogram`` counted (``sum(histogram)``): ``finite`` when exact, the
    finite values of the sample otherwise; None when there is no histogram. The counts of a
    sample are raw (not scaled to the tensor): draw proportions."""


class Cancelled(Exception):
    """Raised by :func:`compute_stats` when ``cancel`` was set."""


# ---------------------------------------------------------------------------- formatting


def _short_float(v: float, cast: Callable[[float], Any] | None) -> str:
    """Shortest decimal that reads back as the same value of the element type."""
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if cast is None:
        return repr(v)
    if v == int(v) and abs(v) < 2**53:
        return repr(v)  # integral: all digits (float8 448 is "448.0", not the shorter "450.0")
    target = cast(v)
    for digits in range(1, 18):
        s = f"{v:.{digits}g}"
        if cast(float(s)) == target:
            return repr(float(s))
    return repr(v)  # pragma: no cover - 17 digits always round-trip


def _caster(dtype_code: int) -> Callable[[float], Any] | None:
    import numpy as np

    info = DTYPES[dtype_code]
    if dtype_code in (11, 15):
        return None
    if dtype_code == 14:
        return np.float32
    return info.numpy.type


def format_value(value: Any, dtype_code: int) -> str:
    """One element formatted for its dtype.

    Floats print the shortest decimal that reads back as the same value of their
    type (float16 ``1.5``, float32 ``0.1``), ``nan``, ``inf``, ``-inf``; integers
    in decimal; bool ``true``/``false``; complex ``1.5+2.0j``; strings (``bytes``)
    decoded as UTF-8 with ``backslashreplace`` (not made terminal-safe).
    """
    info = DTYPES.get(dtype_code)
    if dtype_code == STRING:
        if isinstance(value, (bytes, bytearray, memoryview)):
            return bytes(value).decode("utf-8", "backslashreplace")
        return str(value)
    if info is None:
        return str(value)
    if dtype_code == 9:
        return "true" if bool(value) else "false"
    if dtype_code in _COMPLEX:
        z = complex(value)
        cast = _caster(dtype_code)
        re, im = _short_float(z.real, cast), _short_float(z.imag, cast)
        sign = "" if im.startswith("-") else "+"
        return f"{re}{sign}{im}j"
    if info.is_float:
        return _short_float(float(value), _caster(dtype_code))
    return str(int(value))


# ---------------------------------------------------------------------------- chunk driver


@dataclass(frozen=True, slots=True)
class _Chunk:
    b0: int
    """First byte (relative to the tensor)."""
    b1: int
    """End byte."""
    n: int
    """Elements in the chunk."""
    index: int


def _chunks(info: DType, count: int, length: int, chunk_bytes: int) -> list[_Chunk]:
    """Chunks that start on whole elements (6-bit: whole groups of 4 in 3 bytes)."""
    if info.bits >= 8:
        unit_bytes, unit_elems = info.bits // 8, 1
    elif info.bits == 6:
        unit_bytes, unit_elems = 3, 4
    else:
        unit_bytes, unit_elems = 1, 8 // info.bits
    per = max(1, chunk_bytes // unit_bytes)
    out: list[_Chunk] = []
    e0 = 0
    while e0 < count:
        n = min(per * unit_elems, count - e0)
        b0 = (e0 // unit_elems) * unit_bytes
        b1 = min(length, b0 + info.byte_length(n) if info.bits >= 8 else b0 + -(-n * info.bits // 8))
        out.append(_Chunk(b0, b1, n, len(out)))
        e0 += n
    return out


def _blocks(info: DType, c: _Chunk) -> list[_Chunk]:
    """``c`` cut into cache-sized blocks (numpy's passes over one block stay in L2/L3)."""
    if c.b1 - c.b0 <= BLOCK_BYTES:
        return [c]
    return [_Chunk(c.b0 + b.b0, c.b0 + b.b1, b.n, c.index) for b in _chunks(info, c.n, c.b1 - c.b0, BLOCK_BYTES)]


class _Driver:
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
        pool = _pool(self.threads)
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
MIN_PARALLEL_CHUNKS = 2
MIN_UNIT_BYTES = 512 << 10
"""Smallest work unit handed to a worker thread."""
PATTERN_UNIT_BYTES = 2 << 20
"""Same for pattern counts: each unit returns a 65,536-entry table (512 KiB) to zero and add, and on
the loaded 2-core machine a second thread did not pay for itself below this (1–4 MiB float16 tensors)."""


def _pool(threads: int) -> ThreadPoolExecutor:
    """A process-wide pool per thread count (created once: no thread start-up per tensor)."""
    with _pools_lock:
        pool = _pools.get(threads)
        if pool is None:
            pool = _pools[threads] = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="omv-stats")
        return pool


def _buffer(dtype: "np.dtype", n: int, slot: int = 0) -> "np.ndarray":
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


def _count_bytes(b: "np.ndarray") -> "np.ndarray":
    """Occurrences of each byte value (256 int64), counting pairs as uint16 (half the work)."""
    import numpy as np

    n2 = b.size // 2 * 2
    counts = np.zeros(256, dtype=np.int64)
    if n2:
        pairs = np.zeros(65536, dtype=np.int64)
        for start in range(0, n2, BLOCK_BYTES):
            pairs += np.bincount(b[start : min(n2, start + BLOCK_BYTES)].view(np.uint16), minlength=65536)
        square = pairs.reshape(256, 256)  # index = first + 256 * second (little endian): rows are the second byte
        counts += square.sum(axis=0)
        counts += square.sum(axis=1)
    if n2 < b.size:
        counts[int(b[-1])] += 1
    return counts


def _count_small(idx: "np.ndarray") -> "np.ndarray":
    """Occurrences of 0..32 in a uint8 array of bin indices, 32 folded into 31 (the closed last bin).

    Counts pairs of indices as one uint16 (half the ``bincount`` work)."""
    import numpy as np

    n2 = idx.size // 2 * 2
    counts = np.zeros(BINS + 1, dtype=np.int64)
    if n2:
        w = BINS + 1
        pairs = np.bincount(idx[:n2].view(np.uint16), minlength=256 * w)[: 256 * w].reshape(w, 256)[:, :w]
        counts += pairs.sum(axis=0)
        counts += pairs.sum(axis=1)
    if n2 < idx.size:
        counts[int(idx[-1])] += 1
    counts[BINS - 1] += counts[BINS]
    return counts[:BINS]


@dataclass(frozen=True, slots=True)
class _SamplePlan:
    """Evenly spaced sample blocks: block ``start + j * step`` for ``j < k``, ``per`` elements each."""

    per: int
    start: int
    step: int
    k: int
    extra: tuple[int, ...]
    """Further blocks (the ones holding ``must`` elements, when not already sampled); the last may be short."""


def _sample_plan(count: int, item_bytes: int, must: Iterable[int] = ()) -> _SamplePlan:
    per = max(1, SAMPLE_BLOCK_BYTES // max(1, item_bytes))
    full = count // per
    if full == 0:  # less than one block: the sample is the whole tensor
        return _SamplePlan(max(count, 1), 0, 1, 1 if count else 0, ())
    k = min(full, max(1, -(-min(SAMPLE_VALUES, count // SAMPLE_FRACTION) // per)))
    step = full // k
    start = step // 2
    extra = set()
    for e in must:
        if 0 <= e < count:
            b = e // per
            if not (b >= start and (b - start) % step == 0 and (b - start) // step < k):
                extra.add(b)
    return _SamplePlan(per, start, step, k, tuple(sorted(extra)))


def sample_spans(count: int, item_bytes: int, must: Iterable[int] = ()) -> list[tuple[int, int]]:
    """Element spans ``[e0, e1)`` that a sampled histogram counts: ascending, disjoint, deterministic.

    The tensor's ``count`` elements are cut into blocks of ``per = SAMPLE_BLOCK_BYTES //
    item_bytes`` elements; of the ``full = count // per`` whole blocks the sample takes
    ``k = ceil(min(SAMPLE_VALUES, count // SAMPLE_FRACTION) / per)`` (at least 1, at most
    ``full``), evenly spaced: block ``step // 2 + j * step`` for ``j < k``, ``step = full //
    k``. Plus the block holding each element index in ``must`` (:func:`compute_stats` passes
    the first occurrences of the min and of the max, so the first and last bins are never
    falsely empty; the tensor's last block may be short). A tensor of less than one block
    is sampled whole.
    """
    p = _sample_plan(count, item_bytes, must)
    blocks = [p.start + j * p.step for j in range(p.k)] + list(p.extra)
    return [(b * p.per, min(count, (b + 1) * p.per)) for b in sorted(blocks)]


def _default_threads() -> int:
    import os

    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        n = os.cpu_count() or 1
    return max(1, min(2, n))


# ---------------------------------------------------------------------------- entry point


def compute_stats(
    tensor: "Tensor",
    *,
    cancel: threading.Event | None = None,
    progress: Callable[[int, int], None] | None = None,
    chunk_bytes: int = 8 << 20,
    threads: int | None = None,
    histogram: bool | Literal["sampled"] = True,
    on_summary: Callable[[TensorStats], None] | None = None,
) -> TensorStats:
    """Statistics of ``tensor`` in one chunked pass (two for float32/64, complex, wide ints).

    Memory stays bounded (a few chunk-sized scratch arrays per thread). ``cancel`` is
    checked between chunks (raises :class:`Cancelled`); ``progress(done_bytes,
    total_bytes)`` is called after each chunk; the storage is re-checked between
    chunks, so a file changed on disk raises ``FormatError(Io)``. A byte length that
    does not match dims and dtype raises ``FormatError(InvalidModel)``, an unknown
    dtype ``FormatError(Unsupported)``. ``threads`` (default: up to 2) workers share
    the chunks of large tensors.

    Where the histogram costs a pass of its own (float32/64, complex, wide integers; the
    bin counting is most of the time of those): ``histogram=False`` leaves it out (``()``,
    ``None``); ``histogram="sampled"`` stops after the sampled histogram of a tensor of more
    than :data:`SAMPLE_MIN` elements (``hist_exact=False``) and counts every value of a
    smaller one (exact, as ``True``). ``on_summary(stats)`` is called (on the calling thread)
    only when the exact histogram pass follows, just before it: with the sampled histogram
    (``hist_exact=False``) above :data:`SAMPLE_MIN` elements, else with everything but the
    histogram (``histogram=()``, ``hist_range=None``), so a viewer can show the figures while
    the exact histogram is being counted.
    """
    if histogram not in (True, False, "sampled"):
        raise ValueError(f"histogram must be True, False or 'sampled', not {histogram!r}")
    info = DTYPES.get(tensor.dtype)
    if info is None:
        raise FormatError(Kind.UNSUPPORTED, tensor.where + ".dtype", None, f"unknown dtype {tensor.dtype}")
    count = tensor.count
    if cancel is not None and cancel.is_set():
        raise Cancelled()
    if tensor.is_string:
        return _string_stats(tensor, count, cancel, progress)
    expected = info.byte_length(count)
    if tensor.length != expected:
        raise FormatError(
            Kind.INVALID_MODEL, tensor.where, tensor.file_offset,
            f"{tensor.length} bytes stored but {count} {info.name} elements need {expected}",
        )
    raw = tensor.raw()
    if raw.size != expected:
        raise FormatError(Kind.INVALID_MODEL, tensor.where, tensor.file_offset, f"{raw.size} bytes readable, {expected} needed")
    if threads is None:
        threads = _default_threads()
    chunk_bytes = max(1, int(chunk_bytes))
    first = _first_values(raw, info, count)
    if count == 0:
        return TensorStats(count, info.code, None, None, None, None, 0, 0, 0, 0, 0, (), None, first)
    unit = chunk_bytes
    if threads > 1 and raw.size < 4 * threads * chunk_bytes:
        # a tensor of a few chunks: finer work units so every thread gets some
        least = PATTERN_UNIT_BYTES if info.bits <= 16 else MIN_UNIT_BYTES
        unit = min(chunk_bytes, max(least, -(-raw.size // (4 * threads))))
    chunks = _chunks(info, count, raw.size, unit)
    if info.bits <= 16 and count <= SMALL and raw.size <= chunk_bytes:
        stats = _small_stats(raw, info, count, first)
        if progress is not None:
            progress(raw.size, raw.size)
        return stats
    if info.bits <= 16:
        return _pattern_stats(tensor, raw, info, count, chunks, first, cancel, progress, threads)
    return _two_pass_stats(tensor, raw, info, count, chunks, first, cancel, progress, threads, histogram, on_summary)


def _first_values(raw: "np.ndarray", info: DType, count: int) -> tuple[str, ...]:
    k = min(FIRST, count)
    if k == 0:
        return ()
    if info.code == 9:
        return tuple("false" if b == 0 else "true" for b in raw[:k].tolist())
    vals = decode(raw[: info.byte_length(k)], info, k)
    items = vals.tolist() if vals.dtype.kind in "iufc" and vals.dtype.isnative else list(vals)
    return tuple(format_value(v, info.code) for v in items)


# ---------------------------------------------------------------------------- strings


def _string_stats(tensor: "Tensor", count: int, cancel, progress) -> TensorStats:
    strings = tensor.strings or ()
    if len(strings) != count:
        raise FormatError(Kind.INVALID_MODEL, tensor.where, None, f"{len(strings)} strings for {count} elements")
    total = len(strings)
    mn = mx = None
    tot = 0
    step = 1 << 16
    for start in range(0, total, step):
        if cancel is not None and cancel.is_set():
            raise Cancelled()
        lens = [len(s) for s in strings[start : start + step]]
        lo, hi = min(lens), max(lens)
        mn = lo if mn is None else min(mn, lo)
        mx = hi if mx is None else max(mx, hi)
        tot += sum(lens)
        if progress is not None:
            progress(min(start + step, total), total)
    previews = tuple(_preview(s) for s in strings[:FIRST])
    return TensorStats(
        count, STRING, None, None, None, None, 0, 0, 0, 0, 0, (), None, previews,
        min_len=mn, max_len=mx, total_len=tot if total else None, previews=previews,
    )


def _preview(s: bytes) -> str:
    text = bytes(s[:PREVIEW_BYTES]).decode("utf-8", "backslashreplace")
    return text + "…" if len(s) > PREVIEW_BYTES else text


# ---------------------------------------------------------------------------- <= 16 bits: pattern counts


@functools.cache
def _pattern_values(info: DType) -> "np.ndarray":
    """float64 value of every bit pattern of the type (index = pattern); read-only, cached."""
    import numpy as np

    n = 1 << info.bits
    if info.code == 9:
        return (np.arange(n) != 0).astype(np.float64)
    codes = np.arange(n, dtype=np.uint16 if info.bits == 16 else np.uint8)
    with np.errstate(all="ignore"):
        vals = codes.view(info.numpy).astype(np.float64)
    vals.setflags(write=False)
    return vals


def _pattern_stats(tensor, raw, info: DType, count, chunks, first, cancel, progress, threads) -> TensorStats:
    import numpy as np

    bits = info.bits

    if bits == 16:
        def work(c: _Chunk):
            acc = None
            for b in _blocks(info, c):
                r = np.bincount(raw[b.b0 : b.b1].view(np.uint16), minlength=65536)
                if acc is None:
                    acc = r
                else:
                    acc += r
            return acc
    elif bits == 6:
        def work(c: _Chunk):
            acc = np.zeros(64, dtype=np.int64)
            for b in _blocks(info, c):
                acc += np.bincount(decode(raw[b.b0 : b.b1], info, b.n).view(np.uint8), minlength=64)
            return acc
    else:  # 8, 4, 2 bits: count bytes (pairs of them), fold fields at the end
        def work(c: _Chunk):
            return _count_bytes(raw[c.b0 : c.b1])

    driver = _Driver(tensor, cancel, progress, raw.size, threads)
    acc = None
    for r in driver.map(work, chunks):
        if acc is None:
            acc = r.astype(np.int64, copy=r.dtype != np.int64)
        else:
            acc += r
    assert acc is not None
    if bits in (4, 2):
        per = 8 // bits
        fields = 1 << bits
        cube = acc.reshape((fields,) * per)  # axis 0 is the highest field of the byte
        counts = np.zeros(fields, dtype=np.int64)
        for j in range(per):  # field j sits at bits j*bits..; axis per-1-j
            axes = tuple(a for a in range(per) if a != per - 1 - j)
            counts += cube.sum(axis=axes)
        pad = per * raw.size - count
        if pad:
            last = int(raw[-1])
            for j in range(per - pad, per):
                counts[(last >> (j * bits)) & (fields - 1)] -= 1
    else:
        counts = acc
    return _from_counts(info, count, counts, first)


@dataclass(frozen=True, slots=True)
class _PatternTable:
    """Per-dtype tables over every bit pattern (built once): where the special values are, finite ones by value."""

    order: "np.ndarray"
    """Patterns of finite values, sorted by value."""
    values: "np.ndarray"
    """Their values (float64), ascending."""
    nan: "np.ndarray"
    posinf: "np.ndarray"
    neginf: "np.ndarray"
    zero: "np.ndarray"


@functools.cache
def _pattern_table(info: DType) -> _PatternTable:
    import numpy as np

    vals = _pattern_values(info)
    fin = np.flatnonzero(np.isfinite(vals))
    order = fin[np.argsort(vals[fin], kind="stable")]
    sorted_vals = vals[order]
    arrays = [order, sorted_vals]
    for a in (np.flatnonzero(np.isnan(vals)), np.flatnonzero(vals == np.inf), np.flatnonzero(vals == -np.inf),
              np.flatnonzero(vals == 0)):
        arrays.append(a)
    for a in arrays:
        a.setflags(write=False)
    return _PatternTable(*arrays)


def _from_counts(info: DType, count: int, counts: "np.ndarray", first) -> TensorStats:
    """Statistics from the occurrences of every bit pattern (``counts[pattern]``).

    Works on the finite patterns sorted by value (a cached table): min/max are the first and
    last patterns that occur, the histogram is a difference of cumulative counts at the bin
    edges (``searchsorted``), so nothing per tensor costs more than a few passes over 65,536
    numbers.
    """
    import numpy as np

    t = _pattern_table(info)
    nan = int(counts[t.nan].sum())
    posinf = int(counts[t.posinf].sum())
    neginf = int(counts[t.neginf].sum())
    zeros = int(counts[t.zero].sum())
    c = counts[t.order]
    occurs = c != 0
    i0 = int(occurs.argmax())  # first True (argmax stops there)
    if not occurs[i0]:
        return TensorStats(count, info.code, None, None, None, None, nan, posinf, neginf, zeros, 0, (), None, first)
    i1 = c.size - int(occurs[::-1].argmax())
    c = c[i0:i1]
    v = t.values[i0:i1]
    cum = np.cumsum(c)
    finite = int(cum[-1])
    lo, hi = float(v[0]), float(v[-1])
    cf = c.astype(np.float64)
    mean = float(np.add.reduce(cf * v)) / finite  # not np.dot: no BLAS (and its threads) for this
    dev = v - mean
    std = math.sqrt(float(np.add.reduce(cf * dev * dev)) / finite)
    # numpy.histogram's bins: value v goes to bin i when edges[i] <= v < edges[i + 1] (the last bin closed)
    hlo, hhi = (lo - 0.5, hi + 0.5) if lo == hi else (lo, hi)
    edges = np.linspace(hlo, hhi, BINS + 1)
    cut = np.searchsorted(v, edges[1:-1], side="left")  # first value >= each inner edge
    at = np.concatenate(([0], cum))[np.concatenate((cut, [v.size]))]
    histogram = tuple(int(h) for h in np.diff(at, prepend=0))
    mn: float | int = lo
    mx: float | int = hi
    if not info.is_float:
        mn, mx = int(lo), int(hi)
    return TensorStats(
        count, info.code, mn, mx, mean, std, nan, posinf, neginf, zeros, finite, histogram,
        (float(edges[0]), float(edges[-1])), first, hist_count=finite,
    )


def _small_stats(raw: "np.ndarray", info: DType, count: int, first) -> TensorStats:
    """Few elements: decode them all (cheaper than counting 65,536 patterns); same arithmetic."""
    import numpy as np

    if info.code == 9:
        vals = (raw[:count] != 0).astype(np.float64)
    else:
        with np.errstate(all="ignore"):
            vals = decode(raw, info, count).astype(np.float64)
    return _from_values(info, count, vals, np.ones(vals.size, dtype=np.int64), first)


def _from_values(info: DType, count: int, vals: "np.ndarray", counts: "np.ndarray", first) -> TensorStats:
    """Statistics of a multiset: ``counts[i]`` occurrences of ``vals[i]`` (float64)."""
    import numpy as np

    nan = int(counts[np.isnan(vals)].sum())
    posinf = int(counts[vals == np.inf].sum())
    neginf = int(counts[vals == -np.inf].sum())
    zeros = int(counts[vals == 0].sum())
    fin = np.isfinite(vals)
    finite = int(counts[fin].sum())
    if finite == 0:
        return TensorStats(count, info.code, None, None, None, None, nan, posinf, neginf, zeros, 0, (), None, first)
    v, c = vals[fin], counts[fin]
    lo, hi = float(v.min()), float(v.max())
    cf = c.astype(np.float64)
    mean = float(np.add.reduce(cf * v)) / finite  # not np.dot: no BLAS (and its threads) for this
    dev = v - mean
    std = math.sqrt(float(np.add.reduce(cf * dev * dev)) / finite)
    histogram, edges = _weighted_histogram(v, c, lo, hi)
    mn: float | int = lo
    mx: float | int = hi
    if not info.is_float:
        mn, mx = int(lo), int(hi)
    return TensorStats(
        count, info.code, mn, mx, mean, std, nan, posinf, neginf, zeros, finite, histogram, edges, first,
        hist_count=finite,
    )


def _weighted_histogram(v: "np.ndarray", c: "np.ndarray", lo: float, hi: float) -> tuple[tuple[int, ...], tuple[float, float]]:
    """``numpy.histogram(v, 32, (lo, hi), weights=c)`` with integer counts, the same bins, less overhead."""
    import numpy as np

    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    edges = np.linspace(lo, hi, BINS + 1)
    norm = BINS / (hi - lo)
    with np.errstate(all="ignore"):
        idx = ((v - lo) * norm).astype(np.intp)
    np.clip(idx, 0, BINS - 1, out=idx)
    # numpy's correction for values a rounding away from an edge
    idx[v < edges[idx]] -= 1
    idx[(v >= edges[idx + 1]) & (idx != BINS - 1)] += 1
    counts = np.bincount(idx, weights=c.astype(np.float64), minlength=BINS)
    return tuple(int(round(h)) for h in counts), (float(edges[0]), float(edges[-1]))


# ---------------------------------------------------------------------------- float32/64, complex, wide ints


def _merge(a: tuple[int, float, float], n: int, s: float, m2: float) -> tuple[int, float, float]:
    """Merge (count, mean, M2) with a part of ``n`` values, sum ``s``, squared deviations ``m2`` (Chan et al.)."""
    na, ma, m2a = a
    if n == 0:
        return a
    mb = s / n
    if na == 0:
        return n, mb, m2
    tot = na + n
    delta = mb - ma
    return tot, ma + delta * n / tot, m2a + m2 + delta * delta * na * n / tot


def _moments(x: "np.ndarray", peak: float) -> tuple[float, float]:
    """(Σx, Σ(x − x̄)²) of the finite values ``x`` of one block (any real dtype), in float64, without BLAS.

    ``peak`` bounds ``|x|``. The values are converted to float64 (exactly; integers beyond
    2^53 round) and summed by numpy's own loops (``einsum``), so every figure is float64-grade
    and the same bits whichever BLAS kernel numpy has loaded: a float32 BLAS ``dot``
    accumulates in float32, in an order that depends on the kernel (``OPENBLAS_CORETYPE``):
    relative errors of 1e-7 in the mean, different ones under Haswell and SkylakeX. A block
    centred near zero (16 mean² <= the mean square) takes ``M2 = Σx² − s²/n``, which loses
    under a tenth of a bit there; any other block subtracts its mean first (in float64). The
    float64 passes cost about 0.5 ns per value on the 2-core benchmark machine, twice what the
    float32 ``dot``s did (see the module docstring for the effect on the float32 benchmark).
    """
    import numpy as np

    n = x.size
    if x.dtype == np.float64:
        v, t = x, _buffer(np.float64, n, 2)  # the mapping is read-only: results go to a buffer
    else:
        v = t = _buffer(np.float64, n, 1)
        np.copyto(v, x, casting="unsafe")
    s = float(np.einsum("i->", v))
    if not math.isfinite(s):  # float64 values whose sum overflows: no mean (NaN), std inf
        return math.nan, math.inf
    m = s / n
    if 16.0 * m * m <= peak * peak:  # may be centred near zero: try Σx²
        np.multiply(v, v, out=t)
        q = float(np.einsum("i->", t))
        if math.isfinite(q) and 16.0 * s * s <= q * n:
            return s, max(0.0, q - s * s / n)
        if t is v:  # squared in place: convert again
            np.copyto(v, x, casting="unsafe")
    d = np.subtract(v, m, out=t)
    sd = float(np.einsum("i->", d))
    np.multiply(d, d, out=d)
    dd = float(np.einsum("i->", d))
    return n * m + sd, max(0.0, dd - sd * sd / n) if math.isfinite(dd) else math.inf


def _two_pass_stats(tensor, raw, info: DType, count, chunks, first, cancel, progress, threads, histogram=True,
                    on_summary=None) -> TensorStats:
    import numpy as np

    code = info.code
    npdt = info.numpy
    is_int = code in _WIDE_INT
    is_complex = code in _COMPLEX
    item = info.bits // 8

    def values(c: _Chunk) -> "np.ndarray":
        x = raw[c.b0 : c.b1].view(npdt)
        if is_complex:
            return np.abs(x)
        return x

    def pass1(c: _Chunk):
        zeros = nan = posinf = neginf = 0
        mn = mx = None
        mn_at = mx_at = None  # the first block holding the chunk's min / max
        dirty = False
        agg = (0, 0.0, 0.0)
        with np.errstate(all="ignore"):
            for b in _blocks(info, c):
                bn, bs, bmn, bmx, bz, bna, bpi, bni, bd, bm2 = _pass1(b)
                agg = _merge(agg, bn, bs, bm2)
                zeros += bz
                nan += bna
                posinf += bpi
                neginf += bni
                dirty = dirty or bd
                if bmn is not None:
                    if mn is None or bmn < mn:
                        mn, mn_at = bmn, b
                    if mx is None or bmx > mx:
                        mx, mx_at = bmx, b
        return agg, mn, mx, zeros, nan, posinf, neginf, dirty, mn_at, mx_at

    def _pass1(c: _Chunk):
        x = values(c)
        n = x.size
        if is_int:
            mn, mx = int(x.min()), int(x.max())
            zeros = int(np.count_nonzero(x == 0)) if mn <= 0 <= mx else 0
            s, m2 = _moments(x, float(max(-mn, mx)))
            return n, s, mn, mx, zeros, 0, 0, 0, False, m2
        mn, mx = float(np.minimum.reduce(x)), float(np.maximum.reduce(x))
        if math.isfinite(mn) and math.isfinite(mx):  # min and max propagate NaN: no NaN, no infinity here
            zeros = 0
            if mn <= 0.0 <= mx:
                eq = np.equal(x, 0, out=_buffer(np.bool_, n))
                if mn == 0.0 or mx == 0.0 or eq.any():  # any() costs half a count
                    zeros = int(np.count_nonzero(eq))
            s, m2 = _moments(x, max(-mn, mx))
            return n, s, mn, mx, zeros, 0, 0, 0, False, m2
        fin = np.isfinite(x)
        nf = int(np.count_nonzero(fin))
        nan = int(np.count_nonzero(np.isnan(x)))
        posinf = int(np.count_nonzero(x == np.inf))
        neginf = n - nf - nan - posinf
        if nf == 0:
            return 0, 0.0, None, None, 0, nan, posinf, neginf, True, 0.0
        f = x[fin]
        mn, mx = float(f.min()), float(f.max())
        zeros = int(np.count_nonzero(f == 0)) if mn <= 0.0 <= mx else 0
        s, m2 = _moments(f, max(-mn, mx))
        return nf, s, mn, mx, zeros, nan, posinf, neginf, True, m2

    sampling = histogram is not False and count > SAMPLE_MIN
    passes = 1 if histogram is False or (histogram == "sampled" and sampling) else 2
    driver = _Driver(tensor, cancel, progress, passes * raw.size, threads)
    finite = zeros = nan = posinf = neginf = 0
    agg = (0, 0.0, 0.0)
    lo = hi = None
    lo_at = hi_at = None
    dirty: set[int] = set()
    for c, r in zip(chunks, driver.map(pass1, chunks)):
        (cn, cmean, cm2), mn, mx, z, na, pi, ni, d, mn_at, mx_at = r
        agg = _merge(agg, cn, cmean * cn, cm2)
        zeros += z
        nan += na
        posinf += pi
        neginf += ni
        if d:
            dirty.add(c.index)
        if mn is not None:
            if lo is None or mn < lo:
                lo, lo_at = mn, mn_at
            if hi is None or mx > hi:
                hi, hi_at = mx, mx_at
    finite = agg[0]
    if finite == 0 or lo is None or hi is None:
        if passes == 2:
            driver.advance(raw.size)
        return TensorStats(count, code, None, None, None, None, nan, posinf, neginf, zeros, finite, (), None, first)
    flo, fhi = float(lo), float(hi)
    mean = min(max(agg[1], flo), fhi)  # rounding may leave [lo, hi]
    m2 = agg[2]
    std = math.sqrt(m2 / finite) if math.isfinite(m2) else math.inf
    if flo == fhi:
        mean, std = flo, 0.0
    summary = TensorStats(count, code, lo, hi, mean, std, nan, posinf, neginf, zeros, finite, (), None, first)
    if histogram is False:
        return summary
    if flo == fhi:  # one value: no spread, numpy's histogram convention
        if passes == 2:
            driver.advance(raw.size)
        hist1 = [0] * BINS
        hist1[BINS // 2] = finite
        return _replace(summary, histogram=tuple(hist1), hist_range=(flo - 0.5, fhi + 0.5), hist_count=finite)

    # The bin of each finite value, floor((x - lo) * 32 / (hi - lo)), as uint8, counted.
    f32 = np.float32
    work_f32 = npdt == np.float32 or (is_complex and code == 14)
    wide = not math.isfinite(fhi - flo)  # float64 range overflows: halve everything
    norm = BINS / (fhi - flo) if not wide else BINS / (fhi * 0.5 - flo * 0.5)
    if work_f32:
        with np.errstate(all="ignore"):
            norm32 = float(f32(norm))
        if fhi - flo > 1e38 or not math.isfinite(norm32) or norm32 == 0.0:
            work_f32 = False  # float32 arithmetic would overflow on this range: compute in float64

    def bin_into(x: "np.ndarray", idx: "np.ndarray") -> None:
        """Bin indices (0..32, 32 = the closed last bin) of finite values ``x`` into ``idx`` (uint8, same shape)."""
        n, shape = x.size, x.shape
        if work_f32:
            t = np.subtract(x, f32(flo), out=_buffer(np.float32, n).reshape(shape), dtype=np.float32)
            np.multiply(t, f32(norm), out=t)
        else:
            if x.dtype == np.float64:
                xf = x
            else:  # integers, or float32 whose range overflows float32
                xf = _buffer(np.float64, n, 1).reshape(shape)
                np.copyto(xf, x, casting="unsafe")
            t = _buffer(np.float64, n, 2).reshape(shape)
            if wide:
                np.multiply(xf, 0.5, out=t)
                np.subtract(t, flo * 0.5, out=t)
            else:
                np.subtract(xf, flo, out=t)
            if math.isfinite(norm):
                np.multiply(t, norm, out=t)
            else:  # a subnormal range: 32 / range overflows, the ratio does not
                np.divide(t, fhi - flo, out=t)
                np.multiply(t, BINS, out=t)
        np.copyto(idx, t, casting="unsafe")  # t is in [0, 32] (up to rounding): no clamp needed

    if sampling:
        # The sampled histogram: evenly spaced blocks (one strided 2-D view: few numpy calls, so
        # the worker threads do not queue for the GIL) plus the blocks of the first min and max.
        def locate(b: _Chunk, v) -> int:
            """Element index of the first value equal to ``v`` in block ``b``."""
            with np.errstate(all="ignore"):
                return b.b0 // item + int(np.argmax(values(b) == v))

        assert lo_at is not None and hi_at is not None
        plan = _sample_plan(count, item, (locate(lo_at, lo), locate(hi_at, hi)))
        x1 = raw.view(npdt)
        grid = np.lib.stride_tricks.as_strided(
            x1[plan.start * plan.per :], shape=(plan.k, plan.per), strides=(plan.step * plan.per * item, item),
            writeable=False,
        )
        rows = max(1, SAMPLE_UNIT_VALUES // plan.per)
        units: list["np.ndarray"] = [grid[r : r + rows] for r in range(0, plan.k, rows)]
        units += [x1[b * plan.per : (b + 1) * plan.per] for b in plan.extra]

        def sample_unit(x: "np.ndarray") -> "np.ndarray":
            with np.errstate(all="ignore"):
                if is_complex:
                    x = np.abs(x)
                if dirty:  # some chunk holds NaN/Inf: keep the finite values
                    x = x[np.isfinite(x)]
                idx = _buffer(np.uint8, x.size, 1).reshape(x.shape)
                bin_into(x, idx)
            return _count_small(idx.reshape(-1))

        hs = np.zeros(BINS, dtype=np.int64)
        for r in driver.map(sample_unit, units, advance=False):
            hs += r
        summary = _replace(summary, histogram=tuple(int(h) for h in hs), hist_range=(flo, fhi), hist_exact=False,
                           hist_count=int(hs.sum()))
        if histogram == "sampled":
            return summary
    if on_summary is not None:
        on_summary(summary)

    # Pass 2: every finite value binned and counted.
    def pass2(c: _Chunk):
        counts = np.zeros(BINS, dtype=np.int64)
        with np.errstate(all="ignore"):
            for b in _blocks(info, c):
                x = values(b)
                if b.index in dirty:
                    x = x[np.isfinite(x)]
                if x.size:
                    idx = _buffer(np.uint8, x.size)
                    bin_into(x, idx)
                    counts += _count_small(idx)
        return counts

    hist = np.zeros(BINS, dtype=np.int64)
    for r in driver.map(pass2, chunks):
        hist += r
    return _replace(summary, histogram=tuple(int(h) for h in hist), hist_range=(flo, fhi), hist_exact=True,
                    hist_count=finite)


def _replace(s: TensorStats, **kw: Any) -> TensorStats:
    import dataclasses

    return dataclasses.replace(s, **kw)
