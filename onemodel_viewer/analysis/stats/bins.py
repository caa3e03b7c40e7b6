"""Binning for the two-pass statistics: the histogram of every finite value over the exact [min, max].

``(x − min) · 32/(max − min)`` in the data's own float type (:class:`Binner`), cast to ``uint8``,
counted with a ``bincount`` over *pairs* of bin indices (:func:`count_small`: ~0.65 ns per
element; triples, one-hot sums, ``add.at`` and 31 comparisons were measured and are slower).
The same binning serves the sampled histogram and pass 2 (:func:`chunk_histogram`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ...format.dtypes import DataType, DType
from ...kernels import KERNELS, kind
from .chunks import Chunk, blocks, scratch
from .kernel import values
from .result import BINS

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np


def count_small(idx: "np.ndarray") -> "np.ndarray":
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


class Binner:
    """The bin, ``floor((x − lo) · 32 / (hi − lo))`` (32 = the closed last bin), of finite values.

    float32 data (and complex64 magnitudes) is binned in float32 unless that would overflow on this
    range; everything else in float64 (a range that overflows float64 is halved first).
    """

    def __init__(self, info: DType, lo: float, hi: float) -> None:
        import numpy as np

        self.lo, self.hi = lo, hi
        self.wide = not math.isfinite(hi - lo)
        """The float64 range overflows: halve everything."""
        self.norm = BINS / (hi - lo) if not self.wide else BINS / (hi * 0.5 - lo * 0.5)
        self.f32 = info.numpy == np.float32 or info.code == DataType.COMPLEX64
        """Bin in float32."""
        if self.f32:
            with np.errstate(all="ignore"):
                norm32 = float(np.float32(self.norm))
            if hi - lo > 1e38 or not math.isfinite(norm32) or norm32 == 0.0:
                self.f32 = False  # float32 arithmetic would overflow on this range: compute in float64

    def __call__(self, x: "np.ndarray", idx: "np.ndarray") -> None:
        """Bin indices (0..32) of finite values ``x`` into ``idx`` (uint8, same shape)."""
        import numpy as np

        n, shape = x.size, x.shape
        lo, norm = self.lo, self.norm
        if self.f32:
            f32 = np.float32
            t = np.subtract(x, f32(lo), out=scratch(np.float32, n).reshape(shape), dtype=np.float32)
            np.multiply(t, f32(norm), out=t)
        else:
            if x.dtype == np.float64:
                xf = x
            else:  # integers, or float32 whose range overflows float32
                xf = scratch(np.float64, n, 1).reshape(shape)
                np.copyto(xf, x, casting="unsafe")
            t = scratch(np.float64, n, 2).reshape(shape)
            if self.wide:
                np.multiply(xf, 0.5, out=t)
                np.subtract(t, lo * 0.5, out=t)
            else:
                np.subtract(xf, lo, out=t)
            if math.isfinite(norm):
                np.multiply(t, norm, out=t)
            else:  # a subnormal range: 32 / range overflows, the ratio does not
                np.divide(t, self.hi - lo, out=t)
                np.multiply(t, BINS, out=t)
        np.copyto(idx, t, casting="unsafe")  # t is in [0, 32] (up to rounding): no clamp needed


def chunk_histogram(raw: "np.ndarray", info: DType, c: Chunk, binner: Binner, dirty: set[int]) -> "np.ndarray":
    """Pass 2 over chunk ``c``: the 32 bin counts of its finite values (``dirty``: chunks holding NaN/Inf)."""
    import numpy as np

    counts = np.zeros(BINS, dtype=np.int64)
    k = None if KERNELS is None or info.is_complex else kind(np.dtype(info.numpy))
    if k is not None:  # the compiled binning: the same arithmetic as Binner, one read, the GIL released
        mode = 0 if binner.f32 else 2 if binner.wide else 1
        KERNELS.hist32(raw[c.b0 : c.b1], k, mode, binner.lo, binner.norm, binner.hi, counts)
        return counts
    with np.errstate(all="ignore"):
        for b in blocks(info, c):
            x = values(raw, info, b)
            if b.index in dirty:
                x = x[np.isfinite(x)]
            if x.size:
                idx = scratch(np.uint8, x.size)
                binner(x, idx)
                counts += count_small(idx)
    return counts
