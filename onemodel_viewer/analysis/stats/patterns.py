"""Statistics of a type of 16 bits or less, from bit-pattern counts (:func:`pattern_stats`).

One pass counts how often each bit pattern occurs (``bincount``; 8-bit types count byte *pairs* as
``uint16``, which halves the work; 4- and 2-bit types count whole bytes and fold the nibbles/fields
afterwards). Everything then follows exactly from at most 65,536 (count, value) pairs: min, max,
mean, std, NaN/Inf/zero counts and the histogram, with no rounding from summation order: for 16-bit
types by :mod:`.stats_rows`; for narrower ones the finite patterns that occur, sorted by value
(:func:`_from_counts`): min/max are the first/last and the histogram is a difference of cumulative
counts at the bin edges. The ``bincount`` (~1.3 ns per
element) is most of the time. Measured and not taken (numpy 2.4 on the 2-core benchmark machine):
float16 -> float32 by ``astype`` is 2.3–4.3 ns per element there (the cast loop is not dispatched
to F16C: the wheel's baseline is x86-64-v2), more than the whole count; a float path for bfloat16
(shift to float32, float64 sums, then a binned histogram counted over index pairs) adds up to
~1.7 ns per element against the count's ~1.3, and the histogram still needs a count per element. A tensor of few elements is decoded whole instead
(:func:`small_stats`): the same arithmetic over a multiset.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...format.dtypes import DataType, DType, decode
from ...kernels import KERNELS
from .chunks import BLOCK_BYTES, Chunk, Driver, blocks
from .rows import one_bin, pattern_values, row_stats
from .result import BINS, Cancelled, TensorStats

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np


def count_bytes(b: "np.ndarray") -> "np.ndarray":
    """Occurrences of each byte value (256 int64), counting pairs as uint16 (half the work)."""
    import numpy as np

    n2 = b.size // 2 * 2
    counts = np.zeros(256, dtype=np.int64)
    if n2:
        pairs = np.zeros(65536, dtype=np.int64)
        if KERNELS is not None:
            KERNELS.count16(b[:n2], pairs)
        else:
            for start in range(0, n2, BLOCK_BYTES):
                pairs += np.bincount(b[start : min(n2, start + BLOCK_BYTES)].view(np.uint16), minlength=65536)
        square = pairs.reshape(256, 256)  # index = first + 256 * second (little endian): rows are the second byte
        counts += square.sum(axis=0)
        counts += square.sum(axis=1)
    if n2 < b.size:
        counts[int(b[-1])] += 1
    return counts


PIECE = 1 << 19
"""``bincount`` counts at most this many 16-bit values per call: it widens them to ``intp`` first, and a
larger temporary leaves the cache (4.5 MiB float16 tensors: 1.20 GB/s per CPU second at 512 Ki values per
call, 1.23 at 256 Ki, 1.03 at 1 Mi, whose temporary is 8 MiB)."""


KERNEL_PIECE = 1 << 22
"""The compiled count takes this many 16-bit values per call (8 MiB: cancel checked between calls)."""


def bincount16(codes: "np.ndarray", cancel=None) -> "np.ndarray":
    """Occurrences of each of the 65,536 values of ``codes`` (uint16) as 65,536 int64, counted in pieces
    of :data:`PIECE` values; ``cancel`` (an Event) is checked between pieces."""
    import numpy as np

    if KERNELS is not None:  # the compiled count: ~4x numpy's, the GIL released
        acc = np.zeros(1 << 16, dtype=np.int64)
        for start in range(0, max(codes.size, 1), KERNEL_PIECE):
            if start and cancel is not None and cancel.is_set():
                raise Cancelled()
            KERNELS.count16(codes[start : start + KERNEL_PIECE], acc)
        return acc
    acc = np.bincount(codes[:PIECE], minlength=1 << 16)  # (an empty tensor: zeros)
    for start in range(PIECE, codes.size, PIECE):
        if cancel is not None and cancel.is_set():
            raise Cancelled()
        acc += np.bincount(codes[start : start + PIECE], minlength=1 << 16)
    return acc


def count16(codes: "np.ndarray", row: "np.ndarray", cancel=None) -> None:
    """:func:`bincount16` of ``codes`` into ``row`` (65,536 float64: exact integers below 2^53)."""
    import numpy as np

    if KERNELS is not None:  # counted straight into the float64 row
        row[:] = 0
        for start in range(0, max(codes.size, 1), KERNEL_PIECE):
            if start and cancel is not None and cancel.is_set():
                raise Cancelled()
            KERNELS.count16(codes[start : start + KERNEL_PIECE], row, True)
        return
    np.copyto(row, bincount16(codes, cancel), casting="unsafe")


def pattern_stats(tensor, raw, info: DType, count, chunks, first, cancel, progress, threads) -> TensorStats:
    counts = pattern_counts(tensor, raw, info, count, chunks, cancel, progress, threads)
    if info.bits == 16:
        return row_stats(info, count, counts, first)
    return _from_counts(info, count, counts, first)


def pattern_counts(tensor, raw, info: DType, count, chunks, cancel, progress, threads) -> "np.ndarray":
    """Occurrences of every bit pattern of the tensor's type (``2^bits`` int64), chunk by chunk."""
    import numpy as np

    bits = info.bits

    if bits == 16:
        def work(c: Chunk):
            return bincount16(raw[c.b0 : c.b1].view(np.uint16))  # (the Driver checks cancel between chunks)
    elif bits == 6:
        def work(c: Chunk):
            acc = np.zeros(64, dtype=np.int64)
            for b in blocks(info, c):
                acc += np.bincount(decode(raw[b.b0 : b.b1], info, b.n).view(np.uint8), minlength=64)
            return acc
    else:  # 8, 4, 2 bits: count bytes (pairs of them), fold fields at the end
        def work(c: Chunk):
            return count_bytes(raw[c.b0 : c.b1])

    driver = Driver(tensor, cancel, progress, raw.size, threads)
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
        return counts
    return acc


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

    vals = pattern_values(info)
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
    """Statistics of a type of fewer than 16 bits from the occurrences of every bit pattern (``counts[pattern]``).

    Works on the finite patterns that occur, sorted by value (a cached table of every finite pattern):
    min/max are the first and last, the histogram is a difference of cumulative counts at the bin edges
    (``searchsorted``).
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
    lo, hi = float(v[0]), float(v[-1])
    cum = np.cumsum(c)
    finite = int(cum[-1])
    cf = c.astype(np.float64)
    mean = float(np.add.reduce(cf * v)) / finite  # not np.dot: no BLAS (and its threads) for this
    dev = v - mean
    sq = cf * dev
    sq *= dev  # cf * dev * dev, one temporary less
    std = math.sqrt(float(np.add.reduce(sq)) / finite)
    # numpy.histogram's bins: value v goes to bin i when edges[i] <= v < edges[i + 1] (the last bin closed)
    hlo, hhi = (lo - 0.5, hi + 0.5) if lo == hi else (lo, hi)
    if hlo == hhi:  # one value too large for the +-0.5 to show: every count in the middle bin
        return one_bin(info, count, lo, hi, mean, std, nan, posinf, neginf, zeros, finite, first)
    edges = np.linspace(hlo, hhi, BINS + 1)
    ends = np.empty(BINS, dtype=np.intp)
    ends[:-1] = np.searchsorted(v, edges[1:-1], side="left")  # first value >= each inner edge
    ends[-1] = v.size
    at = np.where(ends > 0, cum[ends - 1], 0)  # values below each upper edge
    at[1:] -= at[:-1].copy()
    histogram = tuple(at.tolist())
    mn: float | int = lo
    mx: float | int = hi
    if not info.is_float:
        mn, mx = int(lo), int(hi)
    return TensorStats(
        count, info.code, mn, mx, mean, std, nan, posinf, neginf, zeros, finite, histogram,
        (float(edges[0]), float(edges[-1])), first, hist_count=finite,
    )


def small_stats(raw: "np.ndarray", info: DType, count: int, first) -> TensorStats:
    """Few elements: decode them all (cheaper than counting 65,536 patterns); the same arithmetic, each
    value counted once (``cf * v`` is ``v`` when every count is 1)."""
    import numpy as np

    if info.code == DataType.BOOL:
        vals = (raw[:count] != 0).astype(np.float64)
    else:
        with np.errstate(all="ignore"):
            vals = decode(raw, info, count).astype(np.float64)
    fin = np.isfinite(vals)
    nan = posinf = neginf = 0
    v = vals
    if not fin.all():
        nan = int(np.count_nonzero(np.isnan(vals)))
        posinf = int(np.count_nonzero(vals == np.inf))
        neginf = int(np.count_nonzero(vals == -np.inf))
        v = vals[fin]
    zeros = int(np.count_nonzero(v == 0))
    finite = v.size
    if finite == 0:
        return TensorStats(count, info.code, None, None, None, None, nan, posinf, neginf, zeros, 0, (), None, first)
    lo, hi = float(v.min()), float(v.max())
    mean = float(np.add.reduce(v)) / finite  # not np.dot: no BLAS (and its threads) for this
    dev = v - mean
    std = math.sqrt(float(np.add.reduce(dev * dev)) / finite)
    if lo == hi and lo - 0.5 == hi + 0.5:  # as in _from_counts
        return one_bin(info, count, lo, hi, mean, std, nan, posinf, neginf, zeros, finite, first)
    histogram, edges = weighted_histogram(v, None, lo, hi)
    mn: float | int = lo
    mx: float | int = hi
    if not info.is_float:
        mn, mx = int(lo), int(hi)
    return TensorStats(
        count, info.code, mn, mx, mean, std, nan, posinf, neginf, zeros, finite, histogram, edges, first,
        hist_count=finite,
    )


def weighted_histogram(v: "np.ndarray", c: "np.ndarray | None", lo: float, hi: float) -> tuple[tuple[int, ...], tuple[float, float]]:
    """``numpy.histogram(v, 32, (lo, hi), weights=c)`` with integer counts (``c`` None: each value once),
    the same bins, less overhead."""
    import numpy as np

    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    edges = np.linspace(lo, hi, BINS + 1)
    norm = BINS / (hi - lo)
    with np.errstate(all="ignore"):
        idx = ((v - lo) * norm).astype(np.intp)
    np.minimum(idx, BINS - 1, out=idx)
    np.maximum(idx, 0, out=idx)
    # numpy's correction for values a rounding away from an edge
    idx[v < edges[idx]] -= 1
    idx[(v >= edges[idx + 1]) & (idx != BINS - 1)] += 1
    if c is None:
        counts = np.bincount(idx, minlength=BINS)
    else:
        counts = np.rint(np.bincount(idx, weights=c.astype(np.float64), minlength=BINS)).astype(np.int64)
    return tuple(counts.tolist()), (float(edges[0]), float(edges[-1]))


# ---------------------------------------------------------------------------- float32/64, complex, wide ints
