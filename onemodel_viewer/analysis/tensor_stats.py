"""What :func:`~onemodel_viewer.analysis.stats.compute_stats` returns, and how one element is formatted."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

from ..format.dtypes import DTYPES, STRING, DataType

BINS = 32
"""Histogram bins."""
FIRST = 16
"""How many leading values (or strings) are kept formatted."""


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
    if dtype_code in (DataType.DOUBLE, DataType.COMPLEX128):
        return None
    if dtype_code == DataType.COMPLEX64:
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
    if dtype_code == DataType.BOOL:
        return "true" if bool(value) else "false"
    if info.is_complex:
        z = complex(value)
        cast = _caster(dtype_code)
        re, im = _short_float(z.real, cast), _short_float(z.imag, cast)
        sign = "" if im.startswith("-") else "+"
        return f"{re}{sign}{im}j"
    if info.is_float:
        return _short_float(float(value), _caster(dtype_code))
    return str(int(value))

