"""Pass 1 of the two-pass statistics (float32/64, complex, 32/64-bit integers): the block kernel.

Each chunk is cut into 1 MiB blocks so the several numpy passes over a block hit the cache. Per
block (:func:`block_figures`): min, max (both propagate NaN, so finite ones prove the block holds
no NaN/Inf; only other blocks count them), zeros, and the sum and the sum of squared deviations
from the block's own mean (:func:`moments`, float64 and BLAS-free), merged one block at a time in
block order with Chan et al.'s formula (:meth:`Figures.add`). The blocks lie on a fixed grid of the
tensor (:func:`~.stats_chunks.unit_bytes`) and the merge never groups them by chunk, so the figures are
the same bits whatever the thread count, the chunk size (of at least a block) or the OpenBLAS kernel.
Before, chunks were sized from the thread count and merged chunk by chunk: float32 means and stds
differed in their last bits between 1 and 2 threads (45 of 3,773 tensors of the 1G benchmark model).

Costs on the (shared) 2-core benchmark machine, 1 GiB of float32 (256 Mi values), against one
``numpy.sum`` of the same bytes: pass 1 about 3.7–4x, CPU time of both threads about 6.5–7x (each
1 MiB block read once from memory, three times more as float32 from L2: min, max, ``== 0``, then
converted to float64 and read three times: Σx, x·x, Σx²; the float64 part costs ~0.5 ns per value,
as much as the rest). The float32 BLAS ``dot`` calls used before were faster (2.58x) but
accumulated in float32 in an order that depends on the OpenBLAS kernel: a mean of the benchmark
tensor 7e-7 off.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from ...format.dtypes import DType
from ...kernels import KERNELS, kind
from .chunks import Chunk, blocks, scratch

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np


def merge(a: tuple[int, float, float], n: int, s: float, m2: float) -> tuple[int, float, float]:
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


def moments(x: "np.ndarray", peak: float) -> tuple[float, float]:
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
        v, t = x, scratch(np.float64, n, 2)  # the mapping is read-only: results go to a buffer
    else:
        v = t = scratch(np.float64, n, 1)
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


def values(raw: "np.ndarray", info: DType, c: Chunk) -> "np.ndarray":
    """The values of chunk (or block) ``c`` that the statistics cover: ``|z|`` for complex."""
    import numpy as np

    x = raw[c.b0 : c.b1].view(info.numpy)
    return np.abs(x) if info.is_complex else x


class BlockFigures(NamedTuple):
    """Pass 1 over one block."""

    n: int
    """Finite values."""
    s: float
    """Their sum."""
    lo: float | int | None
    """Smallest finite value (None when none)."""
    hi: float | int | None
    zeros: int
    nan: int
    posinf: int
    neginf: int
    dirty: bool
    """The block holds NaN or infinities."""
    m2: float
    """Squared deviations of the finite values from their mean."""


def block_figures(x: "np.ndarray", is_int: bool) -> BlockFigures:
    """Pass 1 over the values ``x`` of one block (call under ``np.errstate(all="ignore")``)."""
    import numpy as np

    n = x.size
    if is_int:
        mn, mx = int(x.min()), int(x.max())
        zeros = int(np.count_nonzero(x == 0)) if mn <= 0 <= mx else 0
        s, m2 = moments(x, float(max(-mn, mx)))
        return BlockFigures(n, s, mn, mx, zeros, 0, 0, 0, False, m2)
    mn, mx = float(np.minimum.reduce(x)), float(np.maximum.reduce(x))
    if math.isfinite(mn) and math.isfinite(mx):  # min and max propagate NaN: no NaN, no infinity here
        zeros = 0
        if mn <= 0.0 <= mx:  # count at once: eq.any() first cost 0.47x a numpy.sum of the block, the count 0.26x
            zeros = int(np.count_nonzero(np.equal(x, 0, out=scratch(np.bool_, n))))
        s, m2 = moments(x, max(-mn, mx))
        return BlockFigures(n, s, mn, mx, zeros, 0, 0, 0, False, m2)
    fin = np.isfinite(x)
    nf = int(np.count_nonzero(fin))
    nan = int(np.count_nonzero(np.isnan(x)))
    posinf = int(np.count_nonzero(x == np.inf))
    neginf = n - nf - nan - posinf
    if nf == 0:
        return BlockFigures(0, 0.0, None, None, 0, nan, posinf, neginf, True, 0.0)
    f = x[fin]
    mn, mx = float(f.min()), float(f.max())
    zeros = int(np.count_nonzero(f == 0)) if mn <= 0.0 <= mx else 0
    s, m2 = moments(f, max(-mn, mx))
    return BlockFigures(nf, s, mn, mx, zeros, nan, posinf, neginf, True, m2)


@dataclass(slots=True)
class Figures:
    """Pass 1 over a chunk or a whole tensor: everything but the histogram."""

    agg: tuple[int, float, float] = (0, 0.0, 0.0)
    """(finite values, their mean, M2)."""
    lo: float | int | None = None
    hi: float | int | None = None
    lo_at: Chunk | None = None
    """The first block holding ``lo``."""
    hi_at: Chunk | None = None
    zeros: int = 0
    nan: int = 0
    posinf: int = 0
    neginf: int = 0
    dirty: bool = False
    """Some block holds NaN or infinities."""

    def add(self, n: int, s: float, m2: float, lo, hi, lo_at: Chunk | None, hi_at: Chunk | None,
            zeros: int, nan: int, posinf: int, neginf: int, dirty: bool) -> None:
        """Fold in a later part: ``n`` finite values summing to ``s``, and its other figures."""
        self.agg = merge(self.agg, n, s, m2)
        self.zeros += zeros
        self.nan += nan
        self.posinf += posinf
        self.neginf += neginf
        self.dirty = self.dirty or dirty
        if lo is not None:
            if self.lo is None or lo < self.lo:
                self.lo, self.lo_at = lo, lo_at
            if self.hi is None or hi > self.hi:
                self.hi, self.hi_at = hi, hi_at


def chunk_figures(raw: "np.ndarray", info: DType, c: Chunk) -> list[tuple[Chunk, BlockFigures]]:
    """Pass 1 over chunk ``c``: each block with its figures, in order (the caller merges them, in block order)."""
    import numpy as np

    is_int = not info.is_float and not info.is_complex
    k = None if KERNELS is None or info.is_complex else kind(np.dtype(info.numpy))
    if k is not None:  # the compiled pass: one read of each block, the GIL released
        return [(b, BlockFigures(*KERNELS.figures(raw[b.b0 : b.b1], k))) for b in blocks(info, c)]
    with np.errstate(all="ignore"):
        return [(b, block_figures(values(raw, info, b), is_int)) for b in blocks(info, c)]
