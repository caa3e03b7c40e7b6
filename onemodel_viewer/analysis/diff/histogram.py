"""A histogram of b − a for the diff viewer's detail pane (issue 17): evenly spaced element pairs of two tensors.

No UI here; cancellation is a plain ``threading.Event``.
"""

from __future__ import annotations

import threading

import numpy as np

from ...format.dtypes import DTYPES
from ...format.schema import Tensor
from .result import DiffCancelled

__all__ = ["delta_histogram"]


def delta_histogram(a: Tensor, b: Tensor, bins: int = 32, cancel: threading.Event | None = None,
                    limit: int = 1 << 22) -> tuple[np.ndarray, float, float, int] | None:
    """A histogram of b − a over finite pairs: (counts, low edge, high edge, values counted).

    At most ``limit`` element pairs, evenly spaced (else the whole tensor); ``None`` for non-float or empty.
    """
    info = DTYPES.get(a.dtype)
    if info is None or not info.is_float or a.count == 0 or a.is_string:
        return None
    step = max(1, a.count // limit)
    va, vb = a.values().reshape(-1), b.values().reshape(-1)
    if cancel is not None and cancel.is_set():
        raise DiffCancelled()
    work = np.complex128 if np.iscomplexobj(va) else np.float64
    xa, xb = va[::step].astype(work), vb[::step].astype(work)
    with np.errstate(all="ignore"):
        d = xb - xa
        if work is np.complex128:
            d = np.abs(d)
    d = d[np.isfinite(d)]
    if d.size == 0:
        return np.zeros(bins, np.int64), 0.0, 0.0, 0
    lo, hi = float(d.min()), float(d.max())
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    counts, _ = np.histogram(d, bins=bins, range=(lo, hi))
    return counts, lo, hi, int(d.size)
