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
  NaN/Inf/zero counts and the histogram, with no rounding from summation order
  (16-bit types: :mod:`.stats_rows`, rows of patterns in which the value is affine in the
  column, exact integer sums; narrower types: :mod:`.stats_patterns`, the patterns sorted by
  value). The ``bincount`` (~1.3 ns per element; numpy widens the input to ``intp`` first) is
  most of the time; a 288 KiB float16 tensor (147,456 values, ~200 us of ``bincount``) also pays
  for its 65,536-entry table (one int64 -> float64 copy and a 65,536 x 3 product, ~35 us, plus a
  few dozen small numpy calls) and its first values (memoised per bit pattern).
  :func:`compute_stats_group` (what :mod:`.stats_batch` runs on the many small tensors of a model)
  reduces up to :data:`GROUP` such tables together, so the small calls are paid once per group.
* **Two passes** for float32/float64, complex and 32/64-bit integers, each chunk cut
  into 1 MiB blocks so the several numpy passes over a block hit the cache. Pass 1
  (:mod:`.stats_kernel`) gives everything but the histogram: per block min, max, zeros, and
  float64 BLAS-free sums merged one block at a time, in block order, with Chan et al.'s formula,
  so the figures are float64-grade and the same bits on every machine whatever the OpenBLAS kernel
  and the thread count (the blocks lie on a fixed grid of the tensor; chunks are whole blocks, sized
  from the tensor alone: :func:`~.stats_chunks.unit_bytes`). Pass 2 (needs
  [min, max]; :mod:`.stats_bins`) only bins and counts. Chunks go to a small thread pool
  (:mod:`.stats_chunks`; numpy releases the GIL in these loops). ``histogram=False`` stops
  after pass 1.
* **Sampled histogram first** for a two-pass tensor of more than :data:`SAMPLE_MIN`
  (16 Mi) elements: right after pass 1, the same binning code (same bins over the exact
  [min, max]) counts a sample: evenly spaced 64 KiB blocks holding about one value in 32,
  at most about 8 Mi values, plus the blocks holding the first min and the first max (pass 1
  remembers which 1 MiB block held them), so the first and last bins are never falsely
  empty (:func:`sample_spans` is the rule; no RNG: the same file gives the same sample).
  The result (``hist_exact=False``, ``hist_count`` = values counted, raw counts, not
  scaled) goes to ``on_summary`` before pass 2 starts, or is returned with
  ``histogram="sampled"``; pass 2 then replaces it with the exact histogram. Why: an
  exact histogram cannot fit 3x a ``numpy.sum`` (1 GiB of float32 on the 2-core benchmark
  machine: pass 1 about 3.7–4x, the sample about 5–10 ms, 0.1–0.2x; every figure with the
  sampled histogram arrived at 3.97x and 4.18x in two runs at load ~0.4–0.9).
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

import dataclasses
import functools
import math
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable, Literal

from ...format.dtypes import DTYPES, STRING, DataType, DType, decode
from ...format.errors import FormatError, Kind
from . import bins as stats_bins
from .bins import Binner, chunk_histogram
from .chunks import BLOCK_BYTES, Chunk, Driver, default_threads, scratch, split_chunks, unit_bytes
from .kernel import Figures, chunk_figures, values
from .patterns import count16, pattern_stats, small_stats
from .rows import row_sums, rows_stats, sums_table, table
from .result import BINS, FIRST, Cancelled, TensorStats, format_floats, format_value

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from ...format.schema import Tensor

__all__ = [
    "BINS", "BLOCK_BYTES", "FIRST", "Cancelled", "TensorStats", "compute_stats", "compute_stats_group", "format_value",
    "sample_spans",
]

SMALL = 16384
"""Types of 16 bits or less with at most this many elements are decoded whole instead of counted."""
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
    the chunks of large tensors; the figures are the same bits for any ``threads`` (and any
    ``chunk_bytes`` of at least :data:`BLOCK_BYTES`).

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
    start = _start(tensor, cancel, progress, chunk_bytes)
    if isinstance(start, TensorStats):
        return start
    info, count, raw, chunks, first = start
    if threads is None:
        threads = default_threads()
    if info.bits <= 16:
        return pattern_stats(tensor, raw, info, count, chunks, first, cancel, progress, threads)
    return _two_pass_stats(tensor, raw, info, count, chunks, first, cancel, progress, threads, histogram, on_summary)


GROUP = 16
""":func:`compute_stats_group` reduces the pattern counts of up to this many 16-bit tensors together."""


def compute_stats_group(tensors: "Iterable[Tensor]", *, cancel: threading.Event | None = None,
                        chunk_bytes: int = 8 << 20) -> list[TensorStats]:
    """``[compute_stats(t, cancel=cancel, threads=1, chunk_bytes=chunk_bytes) for t in tensors]``, the same figures.

    The 65,536 pattern counts of consecutive 16-bit tensors of one type are counted straight into the rows of
    one float64 table (:func:`~.stats_patterns.count16`; cancel checked between its pieces, the file after
    each tensor) and reduced together (:func:`~.stats_rows.rows_stats`), so the few dozen numpy calls of that
    step are paid once per group, not per tensor (for the many small float16 tensors of a model: ~100 us
    each). Errors are raised in the order of the tensors, as by ``compute_stats``.
    """
    import numpy as np

    out: list[TensorStats | None] = []
    pending: list[tuple[int, int, tuple[str, ...]]] = []  # (position, elements, first values), one type
    info: DType | None = None
    sums = None

    def flush() -> None:
        if pending:
            assert info is not None and sums is not None
            n = len(pending)
            stats = rows_stats(info, rows[:n], [p[1] for p in pending], [p[2] for p in pending], sums[:n])
            for (i, _, _), st in zip(pending, stats):
                out[i] = st
            pending.clear()

    tensors = list(tensors)
    rows = table(min(GROUP, len(tensors)))
    for t in tensors:
        out.append(None)
        start = _start(t, cancel, None, chunk_bytes)
        if isinstance(start, TensorStats):
            out[-1] = start
            continue
        t_info, count, raw, chunks, first = start
        if t_info.bits != 16:
            out[-1] = compute_stats(t, cancel=cancel, threads=1, chunk_bytes=chunk_bytes)
            continue
        if info is not t_info or len(pending) == len(rows):
            flush()
            if info is not t_info:
                sums = sums_table(t_info, len(rows))
            info = t_info
        j = len(pending)
        count16(raw.view(np.uint16), rows[j], cancel)
        if t.storage is not None:  # the file may have been withdrawn while counting: zeros must not pass as data
            t.storage.check()
        # row sums now, while the counts are in the cache (at the group's end they were not: rows_stats took
        # 85-110 us per tensor in a whole-model run against ~45 us on warm rows)
        row_sums(t_info, rows[j], count, sums[j])
        pending.append((len(out) - 1, count, first))
    flush()
    return out  # type: ignore[return-value]


def _start(tensor: "Tensor", cancel, progress, chunk_bytes: int) -> "TensorStats | tuple[DType, int, np.ndarray, list[Chunk], tuple[str, ...]]":
    """The checks and figures every tensor starts with: the whole result for a string, empty or small tensor,
    else its type, element count, bytes, chunks and first values."""
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
    fetch = getattr(tensor.storage, "fetch_view", None)  # a file at a URL: fetched here, with progress, cancellable
    raw = tensor.raw() if fetch is None or not tensor.length else fetch(tensor.file_offset, tensor.length, cancel, progress)
    if raw is None:
        raise Cancelled()
    if raw.size != expected:
        raise FormatError(Kind.INVALID_MODEL, tensor.where, tensor.file_offset, f"{raw.size} bytes readable, {expected} needed")
    chunk_bytes = max(1, int(chunk_bytes))
    first = _first_values(raw, info, count)
    if count == 0:
        return TensorStats(count, info.code, None, None, None, None, 0, 0, 0, 0, 0, (), None, first)
    if info.bits <= 16 and count <= SMALL and raw.size <= chunk_bytes:
        stats = small_stats(raw, info, count, first)
        if progress is not None:
            progress(raw.size, raw.size)
        return stats
    return info, count, raw, split_chunks(info, count, raw.size, unit_bytes(raw.size, chunk_bytes, info.bits)), first


def _first_values(raw: "np.ndarray", info: DType, count: int) -> tuple[str, ...]:
    k = min(FIRST, count)
    if k == 0:
        return ()
    if info.code == DataType.BOOL:
        return tuple("false" if b == 0 else "true" for b in raw[:k].tolist())
    if info.bits == 16 and info.is_float:
        return _first_floats16(raw, info, k)
    vals = decode(raw[: info.byte_length(k)], info, k)
    if info.is_float and not info.is_complex:
        return format_floats(vals, info.code)
    items = vals.tolist() if vals.dtype.kind in "iufc" and vals.dtype.isnative else list(vals)
    return tuple(format_value(v, info.code) for v in items)


_FORMATTED: dict[int, dict[int, str]] = {}
"""Per 16-bit float type: bit pattern -> its formatted value (at most 65,536 entries per type)."""


def _first_floats16(raw: "np.ndarray", info: DType, k: int) -> tuple[str, ...]:
    """``format_floats`` of the first ``k`` values of a float16/bfloat16 tensor, memoised per bit pattern
    (the digit search was ~45 us of the ~480 us of a 288 KiB float16 tensor in a whole-model run)."""
    import numpy as np

    known = _FORMATTED.setdefault(info.code, {})
    patterns = raw[: 2 * k].view(np.uint16).tolist()
    new = [p for p in dict.fromkeys(patterns) if p not in known]
    if new:
        known.update(zip(new, format_floats(np.array(new, dtype=np.uint16).view(info.numpy), info.code)))
    return tuple(known[p] for p in patterns)


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


# ---------------------------------------------------------------------------- float32/64, complex, wide ints


def _two_pass_stats(tensor, raw, info: DType, count, chunks, first, cancel, progress, threads, histogram=True,
                    on_summary=None) -> TensorStats:
    import numpy as np

    code = info.code
    sampling = histogram is not False and count > SAMPLE_MIN
    passes = 1 if histogram is False or (histogram == "sampled" and sampling) else 2
    driver = Driver(tensor, cancel, progress, passes * raw.size, threads)
    fig = Figures()
    dirty: set[int] = set()
    for c, parts in zip(chunks, driver.map(functools.partial(chunk_figures, raw, info), chunks)):
        for b, f in parts:  # one block at a time, in block order: the same sums whatever ran each chunk
            fig.add(f.n, f.s, f.m2, f.lo, f.hi, b, b, f.zeros, f.nan, f.posinf, f.neginf, f.dirty)
        if any(f.dirty for _, f in parts):
            dirty.add(c.index)
    finite, lo, hi = fig.agg[0], fig.lo, fig.hi
    if finite == 0 or lo is None or hi is None:
        if passes == 2:
            driver.advance(raw.size)
        return TensorStats(count, code, None, None, None, None, fig.nan, fig.posinf, fig.neginf, fig.zeros, finite,
                           (), None, first)
    flo, fhi = float(lo), float(hi)
    mean = min(max(fig.agg[1], flo), fhi)  # rounding may leave [lo, hi]
    m2 = fig.agg[2]
    std = math.sqrt(m2 / finite) if math.isfinite(m2) else math.inf
    if flo == fhi:
        mean, std = flo, 0.0
    summary = TensorStats(count, code, lo, hi, mean, std, fig.nan, fig.posinf, fig.neginf, fig.zeros, finite, (),
                          None, first)
    if histogram is False:
        return summary
    if flo == fhi:  # one value: no spread, numpy's histogram convention
        if passes == 2:
            driver.advance(raw.size)
        hist1 = [0] * BINS
        hist1[BINS // 2] = finite
        return _replace(summary, histogram=tuple(hist1), hist_range=(flo - 0.5, fhi + 0.5), hist_count=finite)
    binner = Binner(info, flo, fhi)
    if sampling:
        summary = _sampled_histogram(summary, raw, info, fig, binner, bool(dirty), driver)
        if histogram == "sampled":
            return summary
    if on_summary is not None:
        on_summary(summary)
    # Pass 2: every finite value binned and counted.
    hist = np.zeros(BINS, dtype=np.int64)
    for r in driver.map(functools.partial(chunk_histogram, raw, info, binner=binner, dirty=dirty), chunks):
        hist += r
    return _replace(summary, histogram=tuple(int(h) for h in hist), hist_range=(flo, fhi), hist_exact=True,
                    hist_count=finite)


def _sampled_histogram(summary: TensorStats, raw, info: DType, fig: Figures, binner: Binner, dirty: bool,
                       driver: Driver) -> TensorStats:
    """``summary`` with the histogram of the sample (:func:`sample_spans`); ``dirty``: some chunk holds NaN/Inf.

    Evenly spaced blocks (one strided 2-D view: few numpy calls, so the worker threads do not queue
    for the GIL) plus the blocks of the first min and max."""
    import numpy as np

    item = info.bits // 8

    def locate(b: Chunk | None, v) -> int:
        """Element index of the first value equal to ``v`` in block ``b``."""
        assert b is not None
        with np.errstate(all="ignore"):
            return b.b0 // item + int(np.argmax(values(raw, info, b) == v))

    plan = _sample_plan(summary.count, item, (locate(fig.lo_at, fig.lo), locate(fig.hi_at, fig.hi)))
    x1 = raw.view(info.numpy)
    grid = np.lib.stride_tricks.as_strided(
        x1[plan.start * plan.per :], shape=(plan.k, plan.per), strides=(plan.step * plan.per * item, item),
        writeable=False,
    )
    rows = max(1, SAMPLE_UNIT_VALUES // plan.per)
    units: list["np.ndarray"] = [grid[r : r + rows] for r in range(0, plan.k, rows)]
    units += [x1[b * plan.per : (b + 1) * plan.per] for b in plan.extra]

    def sample_unit(x: "np.ndarray") -> "np.ndarray":
        with np.errstate(all="ignore"):
            if info.is_complex:
                x = np.abs(x)
            if dirty:  # some chunk holds NaN/Inf: keep the finite values
                x = x[np.isfinite(x)]
            idx = scratch(np.uint8, x.size, 1).reshape(x.shape)
            binner(x, idx)
        return stats_bins.count_small(idx.reshape(-1))  # looked up per call: a test counts these calls

    hs = np.zeros(BINS, dtype=np.int64)
    for r in driver.map(sample_unit, units, advance=False):
        hs += r
    return _replace(summary, histogram=tuple(int(h) for h in hs), hist_range=(binner.lo, binner.hi), hist_exact=False,
                    hist_count=int(hs.sum()))


def _replace(s: TensorStats, **kw: Any) -> TensorStats:
    return dataclasses.replace(s, **kw)
