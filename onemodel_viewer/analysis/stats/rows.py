"""Statistics of a 16-bit type (float16, bfloat16, int16, uint16) from its 65,536 bit-pattern counts.

The counts are read as a matrix of rows of ``M`` patterns (:class:`RowLayout`: float16, int16 and
uint16 take rows of 256, the high byte; bfloat16 rows of 128, sign and exponent) chosen so that in
every row the value is affine in the column: ``v · 2^Z = a_r + b_r · m`` with integers ``a_r``,
``b_r`` (``Z`` = 24 for float16, 133 for bfloat16, 0 for the integers), and a row is all finite or all
Inf/NaN. One matrix product ``counts(R, M) @ [1, m, m²]`` then gives per row the number of values and
the sums of ``m`` and ``m²`` (exact: integers below 2^53 in float64, so no summation order, BLAS kernel or
thread count can change a bit), and everything else works on those R rows:

* mean and std in Python integers over the rows that occur (``Σw``, ``Σw²`` exact; one correctly rounded
  division each): no rounding from summation order;
* min/max from the first and last rows that occur in value order (and one row each);
* the 32-bin histogram as differences of "values below each inner edge", a whole-row prefix plus a part
  of the one row each edge falls in (``numpy.histogram``'s bins: ``edges[i] <= v < edges[i + 1]``).

:func:`rows_stats` does this for several tensors of one type at once (a few dozen numpy calls per group,
not per tensor). Before, the finite patterns that occur were gathered and sorted by value per tensor:
~150-190 us for a 288 KiB float16 tensor against ~200-230 us for its ``bincount``; in groups of 16 this
step is ~80-110 us (CPU time, loaded 2-core benchmark machine), and its sums are exact (the float64 sum of
count * value lost a 1 against 2^100 in bfloat16). The product is the one BLAS call of the statistics: its
operands are integers and so are all its partial sums (below 2^53), so its result has no rounding at all,
whatever the kernel or order; at 65,536 x 3 it stays below OpenBLAS's threading threshold (a 16-tensor
product did not, and cost ten times as much CPU on the loaded machine: one product per tensor).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...format.dtypes import DataType, DType
from .chunks import scratch
from .result import BINS, TensorStats

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

PATTERNS = 1 << 16
EXACT_FLOAT = 1 << 53
"""float64 holds every integer below this exactly: sums of counts that stay below it cannot round."""


@functools.cache
def pattern_values(info: DType) -> "np.ndarray":
    """float64 value of every bit pattern of the type (index = pattern); read-only, cached."""
    import numpy as np

    n = 1 << info.bits
    if info.code == DataType.BOOL:
        return (np.arange(n) != 0).astype(np.float64)
    codes = np.arange(n, dtype=np.uint16 if info.bits == 16 else np.uint8)
    with np.errstate(all="ignore"):
        vals = codes.view(info.numpy).astype(np.float64)
    vals.setflags(write=False)
    return vals


@dataclass(frozen=True, slots=True)
class RowLayout:
    """The 65,536 patterns of a 16-bit type as rows in which the value is affine in the column (built once)."""

    width: int
    """``M``, patterns per row (row ``r`` holds patterns ``r·M .. r·M + M − 1``)."""
    scale: int
    """``Z``: every finite value times ``2^Z`` is an integer."""
    order: "np.ndarray"
    """The finite rows, by value (rows do not overlap: -0's row comes before +0's)."""
    falling: "np.ndarray"
    """Per row of ``order``: True when the value falls as the column grows (negative floats)."""
    coef: tuple[tuple[int, int, int, int, int], ...]
    """Per row (all rows): ``(a, b, a², 2ab, b²)``, Python integers; zeros for the Inf/NaN rows."""
    sequence: "np.ndarray"
    """The finite values in the order of ``order`` (falling rows reversed): ascending, float64."""
    weights: "np.ndarray"
    """``[1, m, m²]`` per column, float64 (M, 3)."""
    special: "np.ndarray"
    """Rows of infinities and NaNs."""
    posinf: int
    """Pattern of +inf, -1 when none."""
    neginf: int
    zeros: tuple[int, ...]
    """Patterns of the value zero."""
    grouped: "np.ndarray"
    """The finite rows grouped by ``|b| = 2^k`` (every row is ``w = ±2^k (α + m)``)..."""
    alpha: "np.ndarray"
    """...their ``α`` (int64)..."""
    sign: "np.ndarray"
    """...and sign (int64 ±1);"""
    starts: "np.ndarray"
    """where each group starts in ``grouped``;"""
    shifts: tuple[int, ...]
    """its ``k``."""
    safe: int
    """Tensors of fewer elements have their ``Σ(α + m)²`` per row below 2^63 (int64)."""


@functools.cache
def row_layout(info: DType) -> RowLayout:
    import numpy as np

    assert info.bits == 16
    vals = pattern_values(info)
    finite = np.isfinite(vals)
    tiny = float(np.min(np.abs(vals[finite & (vals != 0)])))
    scale = int(math.log2(tiny.as_integer_ratio()[1]))
    with np.errstate(invalid="ignore"):
        w = np.ldexp(vals, scale)  # exact: integers
    for width in (256, 128, 64, 32):  # the widest rows in which the value is affine (up to 256: see rows_stats)
        rows_w, rows_fin = w.reshape(-1, width), finite.reshape(-1, width)
        if not (rows_fin.all(axis=1) | ~rows_fin.any(axis=1)).all():
            continue
        fin_rows = np.flatnonzero(rows_fin[:, 0])
        a, b = rows_w[fin_rows, 0], rows_w[fin_rows, 1] - rows_w[fin_rows, 0]
        m = np.arange(width, dtype=np.float64)
        if (rows_w[fin_rows] == a[:, None] + b[:, None] * m).all():
            break
    else:  # pragma: no cover - every 16-bit type of the table has such rows
        raise AssertionError(f"no affine row layout for {info.name}")
    coef = [(0, 0, 0, 0, 0)] * (PATTERNS // width)
    for r, ar, br in zip(fin_rows.tolist(), a.tolist(), b.tolist()):
        ai, bi = int(ar), int(br)
        coef[r] = (ai, bi, ai * ai, 2 * ai * bi, bi * bi)
    order = fin_rows[np.argsort(rows_w[fin_rows].min(axis=1), kind="stable")]
    falling = np.array([coef[r][1] < 0 for r in order.tolist()], dtype=bool)
    seq = vals.reshape(-1, width)[order].copy()
    seq[falling] = seq[falling, ::-1]
    sequence = seq.reshape(-1)
    assert (np.diff(sequence) >= 0).all()
    weights = np.stack([np.ones(width), m, m * m], axis=1)
    special = np.flatnonzero(~rows_fin[:, 0])
    pos, neg = np.flatnonzero(vals == np.inf), np.flatnonzero(vals == -np.inf)
    for arr in (order, falling, sequence, weights, special):
        arr.setflags(write=False)
    shift = {r: abs(coef[r][1]).bit_length() - 1 for r in fin_rows.tolist()}
    assert all(abs(coef[r][1]) == 1 << k and coef[r][0] % coef[r][1] == 0 for r, k in shift.items())
    grouped = np.array(sorted(shift, key=lambda r: (shift[r], r)), dtype=np.intp)
    ks = [shift[r] for r in grouped.tolist()]
    starts = np.array([i for i in range(len(ks)) if i == 0 or ks[i] != ks[i - 1]], dtype=np.intp)
    alpha = np.array([coef[r][0] // coef[r][1] for r in grouped.tolist()], dtype=np.int64)
    sign = np.array([1 if coef[r][1] > 0 else -1 for r in grouped.tolist()], dtype=np.int64)
    safe = ((1 << 63) - 1) // (int(np.abs(alpha).max()) + width) ** 2
    for arr in (grouped, alpha, sign, starts):
        arr.setflags(write=False)
    return RowLayout(width, scale, order, falling, tuple(coef), sequence, weights, special,
                     int(pos[0]) if pos.size else -1, int(neg[0]) if neg.size else -1,
                     tuple(np.flatnonzero(vals == 0).tolist()), grouped, alpha, sign, starts,
                     tuple(ks[i] for i in starts.tolist()), safe)


def table(n: int) -> "np.ndarray":
    """A per-thread (n, 65,536) float64 table for :func:`rows_stats` (counts are copied into its rows)."""
    import numpy as np

    return scratch(np.float64, n * PATTERNS, 3).reshape(n, PATTERNS)


def row_stats(info: DType, count: int, counts: "np.ndarray", first: tuple[str, ...]) -> TensorStats:
    """Statistics of one 16-bit tensor from ``counts[pattern]`` (65,536 int64): :func:`rows_stats` of one."""
    import numpy as np

    return rows_stats(info, counts.astype(np.float64).reshape(1, PATTERNS), [count], [first])[0]


def row_sums(info: DType, counts: "np.ndarray", size: int, out: "np.ndarray") -> None:
    """Per row of the layout, (values, Σm, Σm²) of one tensor of ``size`` elements from its pattern counts
    (65,536 float64, exact integers) into ``out`` (rows x 3 float64): one small matrix product, exact."""
    import numpy as np

    lay = row_layout(info)
    rows = counts.reshape(-1, lay.width)
    if size * (lay.width - 1) ** 2 < EXACT_FLOAT:  # every partial sum an exact integer: any order, same bits
        np.matmul(rows, lay.weights, out=out)  # 65,536 x 3: below OpenBLAS's threading threshold
    else:  # pragma: no cover - more than 2^37 values
        out[...] = rows.astype(np.int64) @ lay.weights.astype(np.int64)


def sums_table(info: DType, n: int) -> "np.ndarray":
    """An (n, rows, 3) float64 array for the :func:`row_sums` of ``n`` tensors of a 16-bit type."""
    import numpy as np

    return np.empty((n, PATTERNS // row_layout(info).width, 3), dtype=np.float64)


def rows_stats(info: DType, counts: "np.ndarray", sizes: list[int], firsts: list[tuple[str, ...]],
               sums: "np.ndarray | None" = None) -> list[TensorStats]:
    """Statistics of several tensors of one 16-bit type from their pattern counts, ``counts[t, pattern]``
    (float64, exact integers), ``sizes[t]`` elements each; each tensor's figures do not depend on the others.
    ``sums[t]``: the tensors' :func:`row_sums`, when already computed (else computed here).

    The steps run on all the tensors at once (a few dozen numpy calls whatever their number), except the
    row sums (one small matrix product per tensor) and the integer mean and variance."""
    import numpy as np

    lay = row_layout(info)
    width = lay.width
    n = counts.shape[0]
    rows = counts.reshape(n, -1, width)
    if sums is None:
        sums = sums_table(info, n)
        for t in range(n):
            row_sums(info, counts[t], sizes[t], sums[t])
    per_row = sums[:, :, 0]
    if lay.special.size:
        posinf, neginf = counts[:, lay.posinf], counts[:, lay.neginf]
        nan = per_row[:, lay.special].sum(axis=1) - posinf - neginf
    else:
        posinf = neginf = nan = np.zeros(n)
    zeros = counts[:, list(lay.zeros)].sum(axis=1)
    ordered = per_row[:, lay.order]
    occurs = ordered != 0
    seen = occurs.any(axis=1)
    first_row = occurs.argmax(axis=1)
    last_row = occurs.shape[1] - 1 - occurs[:, ::-1].argmax(axis=1)
    vals = pattern_values(info)
    every = np.arange(n)

    def extreme(i: "np.ndarray", top: bool) -> "np.ndarray":
        """The smallest (``top`` False) or largest value that occurs in row ``order[i[t]]`` of each tensor."""
        r = lay.order[i]
        nz = rows[every, r] != 0
        low, high = nz.argmax(axis=1), width - 1 - nz[:, ::-1].argmax(axis=1)
        return vals[r * width + np.where(lay.falling[i] == top, low, high)]

    lo, hi = extreme(first_row, False), extreme(last_row, True)
    if info.is_float:  # -0 and +0: the min is +0 when it occurs, the max -0 (what a stable sort by value gives)
        lo = np.where(lo == 0.0, np.where(counts[:, 0] != 0, 0.0, -0.0), lo)
        hi = np.where(hi == 0.0, np.where(counts[:, 0x8000] != 0, -0.0, 0.0), hi)
    lo, hi = np.where(seen, lo, 0.0), np.where(seen, hi, 1.0)
    one = lo == hi
    hlo, hhi = np.where(one, lo - 0.5, lo), np.where(one, hi + 0.5, hi)
    edges = bin_edges(hlo, hhi)
    # values below each inner edge: the rows before the edge's row, and the part of its row before it
    at = np.searchsorted(lay.sequence, edges[:, 1:-1].reshape(-1), side="left").reshape(n, BINS - 1)
    row, col = np.divmod(at, width)
    prefix = np.zeros((n, ordered.shape[1] + 1), dtype=np.float64)
    np.cumsum(ordered, axis=1, out=prefix[:, 1:])
    below = np.zeros((n, BINS + 1), dtype=np.float64)  # values below each edge: 0, the 31 inner edges, all
    below[:, 1:-1] = prefix[every[:, None], row]
    below[:, -1] = finite = prefix[:, -1]
    ti, ei = np.nonzero(col)
    if ti.size:  # the part of the edge's row before the edge: one segment of counts each, summed by reduceat
        r, c = row[ti, ei], col[ti, ei]
        seg = rows[ti, lay.order[r]]  # the edges' rows, one after another: what reduceat sums between stays < M
        start = np.arange(ti.size) * width + np.where(lay.falling[r], width - c, 0)
        bounds = np.stack((start, start + c), axis=1).reshape(-1)
        below[ti, ei + 1] += np.add.reduceat(seg.reshape(-1), bounds)[::2]
    hist = (below[:, 1:] - below[:, :-1]).astype(np.int64).tolist()
    moments = _moments_grouped(lay, sums, sizes) if max(sizes) < lay.safe else None
    out = []
    heads = np.stack((nan, posinf, neginf, zeros, finite), axis=1).astype(np.int64).tolist()
    lo_l, hi_l, edge_l = lo.tolist(), hi.tolist(), edges[:, [0, -1]].tolist()
    for t in range(n):
        nan_t, pos_t, neg_t, zeros_t, fin_t = heads[t]
        if not fin_t:
            out.append(TensorStats(sizes[t], info.code, None, None, None, None, nan_t, pos_t, neg_t, zeros_t, 0, (),
                                   None, firsts[t]))
            continue
        mean, std = moments[t] if moments is not None else _moments(lay, sums[t], ordered[t], fin_t)
        lo_t, hi_t = lo_l[t], hi_l[t]
        mn: float | int = lo_t
        mx: float | int = hi_t
        if not info.is_float:
            mn, mx = int(lo_t), int(hi_t)
        e0, e1 = edge_l[t]
        if e0 == e1:  # one value too large for the +-0.5 to show: every count in the middle bin
            out.append(one_bin(info, sizes[t], lo_t, hi_t, mean, std, nan_t, pos_t, neg_t, zeros_t, fin_t, firsts[t]))
            continue
        out.append(TensorStats(sizes[t], info.code, mn, mx, mean, std, nan_t, pos_t, neg_t, zeros_t, fin_t,
                               tuple(hist[t]), (e0, e1), firsts[t], hist_count=fin_t))
    return out


def _moments(lay: RowLayout, sums: "np.ndarray", ordered: "np.ndarray", finite: int) -> tuple[float, float]:
    """Mean and std, exactly in integers ``w = v·2^Z``: ``Σw`` and ``Σw²`` from the rows' (values, Σm, Σm²)."""
    import numpy as np

    occurring = lay.order[np.flatnonzero(ordered)]
    s = q = 0
    coef = lay.coef
    for r, (c0, c1, c2) in zip(occurring.tolist(), sums[occurring].astype(np.int64).tolist()):
        a, b, aa, ab2, bb = coef[r]
        s += a * c0 + b * c1
        q += aa * c0 + ab2 * c1 + bb * c2
    z = lay.scale
    return s / (finite << z), math.sqrt((finite * q - s * s) / ((finite * finite) << (2 * z)))  # correctly rounded


def _moments_grouped(lay: RowLayout, sums: "np.ndarray", sizes: list[int]) -> list[tuple[float, float] | None]:
    """Mean and std of each tensor, exactly as :func:`_moments` (the same integers ``Σw``, ``Σw²``), with the
    rows of one ``k`` summed in int64 first (``Σ(α + m)`` and ``Σ(α + m)²``): a Python loop over ~30
    groups, not ~90 rows (fewer than :attr:`RowLayout.safe` elements: no int64 overflow)."""
    import numpy as np

    c = sums[:, lay.grouped].astype(np.int64)
    c0, c1, c2 = c[:, :, 0], c[:, :, 1], c[:, :, 2]
    a = lay.alpha
    u1 = np.add.reduceat(lay.sign * (a * c0 + c1), lay.starts, axis=1).tolist()
    u2 = np.add.reduceat((a * a) * c0 + (2 * a) * c1 + c2, lay.starts, axis=1).tolist()
    finite = c0.sum(axis=1).tolist()
    z = lay.scale
    out: list[tuple[float, float] | None] = []
    for n, s1, s2 in zip(finite, u1, u2):
        if not n:
            out.append(None)
            continue
        s = q = 0
        for k, x, y in zip(lay.shifts, s1, s2):
            if y:
                s += x << k
                q += y << (2 * k)
        out.append((s / (n << z), math.sqrt((n * q - s * s) / ((n * n) << (2 * z)))))  # correctly rounded
    return out


def bin_edges(lo: "np.ndarray", hi: "np.ndarray") -> "np.ndarray":
    """``numpy.linspace(lo[t], hi[t], 33)`` for each t, the same bits (numpy.histogram's edges), as one (n, 33) array."""
    import numpy as np

    steps = np.arange(BINS + 1, dtype=np.float64)
    delta = hi - lo
    step = delta / BINS
    y = steps * step[:, None]
    tiny = step == 0
    if tiny.any():  # linspace's way for a subnormal range: divide first
        y[tiny] = (steps / BINS) * delta[tiny, None]
    y += lo[:, None]
    y[:, -1] = hi
    return y


def one_bin(info: DType, count: int, lo: float, hi: float, mean, std, nan, posinf, neginf, zeros, finite,
            first) -> TensorStats:
    """Every finite value is ``lo``, so large (|v| >= 2^53) that ``v - 0.5 == v + 0.5``: no 32 bins fit
    (numpy.histogram raises); all counts go to bin 16, as for any one-valued tensor."""
    hist = [0] * BINS
    hist[BINS // 2] = finite
    mn: float | int = lo
    mx: float | int = hi
    if not info.is_float:
        mn, mx = int(lo), int(hi)
    return TensorStats(count, info.code, mn, mx, mean, std, nan, posinf, neginf, zeros, finite, tuple(hist),
                       (lo - 0.5, hi + 0.5), first, hist_count=finite)
